"""What the failed requests were answered, by HTTP status and kind of body (orchestrator/reports/error_kinds.py)."""

from __future__ import annotations

from orchestrator.events import CauseCode, RequestCorrelated
from orchestrator.reports.error_kinds import MAX_KINDS, ErrorKinds, body_kind, error_kind_rows


def _failed(status: int | None, body: str, cause: CauseCode = "http_4xx") -> RequestCorrelated:
    return RequestCorrelated(request_id="r", window="soak/w0001", phase="profiling", ok=False, cause=cause,
                             http_status=status, error_message=body)


class TestBodyKind:
    def test_a_json_error_keeps_its_code_and_message_with_numbers_masked(self) -> None:
        """The JSON error's code and message tell the kind; sizes, ids and seconds do not."""
        body = '{"error": {"message": "request body of 1240000 bytes exceeds --max-body-bytes 1048576", ' \
               '"type": "invalid_request_error", "code": "content_too_large"}}'
        assert body_kind(body) == "content_too_large invalid_request_error request body of # bytes exceeds " \
                                  "--max-body-bytes #"
        assert body_kind("worker_crashed: request 1f3e5c7a-0b1c-4d2e-8f90-123456789abc lost") == \
            "worker_crashed: request # lost"
        assert body_kind('{"error": "server_draining"}') == "server_draining"


class TestErrorKinds:
    def test_413_stands_apart_from_400_with_one_example_each(self) -> None:
        """413s and 400s of two bodies are three kinds, most first, each with its first body as the example;
        successes and answers with neither status nor body are not counted."""
        kinds = ErrorKinds()
        for n in (1_100_000, 1_200_000, 1_300_000):
            kinds.add(_failed(413, f"request body exceeds limit ({n} bytes)"))
        for s in (13.8, 14.6):
            kinds.add(_failed(400, f"audio of {s} s is too long: the limit is 13 s"))
        kinds.add(_failed(503, '{"error": {"code": "worker_crashed", "message": "the worker exited"}}', "http_5xx"))
        kinds.add(RequestCorrelated(request_id="ok", window="soak/w0001", phase="profiling", ok=True, cause="ok"))
        kinds.add(_failed(None, "", "timeout"))
        rows = error_kind_rows(kinds.rows())
        assert rows == [
            ["413", "http_4xx", "3", "request body exceeds limit (# bytes)", "request body exceeds limit (1100000 bytes)"],
            ["400", "http_4xx", "2", "audio of # s is too long: the limit is # s",
             "audio of 13.8 s is too long: the limit is 13 s"],
            ["503", "http_5xx", "1", "worker_crashed the worker exited",
             '{"error": {"code": "worker_crashed", "message": "the worker exited"}}'],
        ]

    def test_kinds_are_bounded(self) -> None:
        """Past MAX_KINDS kinds, further bodies of a status count together as one row."""
        kinds = ErrorKinds()
        for k in range(MAX_KINDS + 5):
            kinds.add(_failed(400, f"refused: {'x' * (k + 1)}"))
        rows = kinds.rows()
        assert len(rows) == MAX_KINDS + 1 and sum(r.count for r in rows) == MAX_KINDS + 5
