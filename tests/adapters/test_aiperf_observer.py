"""The live tap plugin: registered with AIPerf's plugin registry, disabled unless AQBENCH_TAP_DIR is set."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest


class TestLiveTapObserver:
    def test_registered_and_self_disabling(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """AIPerf's registry finds aqbench_live_tap; it raises PostProcessorDisabled without the env var
        and opens a per-process file in the folder with it."""
        from aiperf.common.exceptions import PostProcessorDisabled
        from aiperf.plugin import plugins

        from adapters.aiperf.observer import TAP_ENV, LiveTapObserver

        cls = plugins.get_class("record_observer", "aqbench_live_tap")
        assert cls is LiveTapObserver
        monkeypatch.delenv(TAP_ENV, raising=False)
        with pytest.raises(PostProcessorDisabled, match="AQBENCH_TAP_DIR"):
            LiveTapObserver(service_id="rp", run=None)
        monkeypatch.setenv(TAP_ENV, str(tmp_path))
        obs = LiveTapObserver(service_id="record_processor:1", run=None)
        assert obs.path.parent == tmp_path and obs.path.name.endswith("-record_processor_1.jsonl")

    @pytest.mark.anyio
    async def test_metrics_in_display_units_as_aiperf_shows_them(self, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
        """The tap's latency, time to first token and output length are the values AIPerf's display dict gives
        for the same record (ns converted to ms), and a metric the record lacks is left out."""
        from aiperf.metrics.metric_dicts import MetricRecordDict
        from aiperf.metrics.metric_registry import MetricRegistry

        from adapters.aiperf.observer import TAP_ENV, LiveTapObserver

        monkeypatch.setenv(TAP_ENV, str(tmp_path))
        obs = LiveTapObserver(service_id="rp", run=None)
        raw = {"request_latency": 30_165_266, "output_sequence_length": 5, "http_req_waiting": 27_642_589}
        md = SimpleNamespace(x_request_id="r1", x_correlation_id="c1", conversation_id="x", benchmark_phase="profiling",
                             phase_name="", session_num=3, worker_id="w", credit_issued_ns=1, request_start_ns=2,
                             request_ack_ns=3, request_end_ns=4, was_cancelled=False)
        request = SimpleNamespace(trace_data=None, error=None, status=200)
        ctx = SimpleNamespace(metadata=md, record=SimpleNamespace(request=request, content_responses=[]),
                              metrics=SimpleNamespace(metrics=raw))
        await obs.observe(ctx)
        line = json.loads(obs.path.read_text())
        display = MetricRecordDict(raw).to_display_dict(MetricRegistry)
        assert line["request_latency_ms"] == display["request_latency"].value == pytest.approx(30.165266)
        assert line["output_tokens"] == display["output_sequence_length"].value == 5
        assert "ttft_ms" not in line and line["session_num"] == 3
