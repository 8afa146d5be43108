"""Server kinds: readiness and model-list parsing, argv rendering, log-line parsing."""

from __future__ import annotations

import pytest

from adapters.server.lines import MAX_LINE_BYTES, LineSplitter, parse_log_line
from adapters.server.reference_kind import ReferenceServerKind
from adapters.server_kinds import server_parts
from adapters.trtmc.server_kind import TrtmcServerKind
from orchestrator.base.errors import ConfigError

KINDS = [ReferenceServerKind(), TrtmcServerKind()]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
class TestReadiness:
    def test_ready_degraded_and_not_ready(self, kind):
        """200 ready (degraded or not) is ready; 503 not_ready and non-JSON bodies are not, with detail."""
        assert kind.parse_readiness(200, b'{"status":"ready","degraded":false}').ready
        degraded = kind.parse_readiness(200, b'{"status":"ready","degraded":true}')
        assert degraded.ready and degraded.degraded
        down = kind.parse_readiness(503, b'{"status":"not_ready","reason":"draining"}')
        assert not down.ready and down.detail == 'HTTP 503 {"status":"not_ready","reason":"draining"}'
        html = kind.parse_readiness(502, b"<html>bad gateway</html>")
        assert not html.ready and "not a JSON object" in html.detail

    def test_models_shape(self, kind):
        """`data[]` with ids is read; anything else is a ValueError naming the problem."""
        assert kind.listed_models(b'{"data":[{"id":"m","object":"model"}]}') == [{"id": "m", "object": "model"}]
        with pytest.raises(ValueError, match="has no data"):
            kind.listed_models(b'{"models":["m"]}')
        with pytest.raises(ValueError, match="not JSON"):
            kind.listed_models(b"nope")


class TestArgv:
    def test_renders_placeholders(self):
        """Every placeholder in an argument is replaced, in place."""
        argv = TrtmcServerKind().render_argv(["trtmc-server", "{bundle}", "--port={port}", "--host", "{host}"],
                                             {"bundle": "/b/x.bundle", "port": "9", "host": "127.0.0.1"})
        assert argv == ["trtmc-server", "/b/x.bundle", "--port=9", "--host", "127.0.0.1"]

    def test_missing_bundle_names_key(self):
        """An empty {bundle} is a ConfigError naming the argv index and the keys to set."""
        with pytest.raises(ConfigError, match=r"server.argv\[1\]: placeholder \{bundle\} has no value for server "
                                              r"kind 'trtmc-server' \(set server.bundle or models\[\].bundle\)"):
            TrtmcServerKind().render_argv(["trtmc-server", "{bundle}"], {"bundle": ""})

    @pytest.mark.parametrize("host", ["0.0.0.0", "localhost", "example.org"])
    def test_trtmc_refuses_what_it_would_exit_on(self, host):
        """trtmc-server takes a loopback IP literal only (it exits 2 on a name): refused before spawning."""
        with pytest.raises(ConfigError, match=rf"--host '{host}': trtmc-server takes a loopback IP address only"):
            TrtmcServerKind().render_argv(["trtmc-server", "--host", host], {})

    @pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1"])
    def test_trtmc_accepts_loopback_ip_literals(self, host):
        assert TrtmcServerKind().render_argv(["trtmc-server", "--host", host], {})[-1] == host

    def test_in_flight_gauge_of_the_reference_server(self):
        """The reference kind reads its /metrics gauge of chat requests in flight; trtmc-server has none known."""
        text = (b"# TYPE aqbench_reference_ready gauge\naqbench_reference_ready 1\n"
                b"# TYPE aqbench_reference_active_requests gauge\naqbench_reference_active_requests 3\n")
        ref = ReferenceServerKind()
        assert (ref.in_flight_path, ref.parse_in_flight(text)) == ("/metrics", 3)
        assert ref.parse_in_flight(b"aqbench_reference_ready 1\n") is None
        assert ref.parse_in_flight(b"aqbench_reference_active_requests nope\n") is None
        assert TrtmcServerKind().in_flight_path == ""

    def test_unknown_kind_lists_valid(self):
        """server_parts names the valid kinds for an unknown one."""
        with pytest.raises(ConfigError, match="unknown kind 'vllm'; valid: reference, trtmc-server"):
            server_parts("vllm")


class TestLines:
    def test_json_uvicorn_and_plain(self):
        """JSON keeps fields and message; Uvicorn's prefix gives the level; plain text has none."""
        parsed = parse_log_line('{"event": "ready", "level": "INFO", "port": 1}')
        assert (parsed.text, parsed.level, parsed.fields["port"]) == ("ready", "info", 1)
        assert parse_log_line("INFO:     Application startup complete.").level == "info"
        assert parse_log_line("WARNING:  slow").level == "warning"
        assert parse_log_line("{not json").fields is None
        assert parse_log_line("hello world").level == ""
        # trtmc-server's per-request log record, behind Uvicorn's prefix: fields kept, level from the prefix.
        rec = parse_log_line('INFO:     {"event": "http_request", "request_id": "aqb-1", "status": 200}')
        assert (rec.text, rec.level, rec.fields["request_id"]) == ("http_request", "info", "aqb-1")
        assert parse_log_line("INFO:     {not json}").fields is None

    def test_splitter_keeps_partial_lines_and_cuts_runaways(self):
        """Chunks split mid-line join correctly; a line beyond the limit is cut and says so."""
        s = LineSplitter()
        assert s.feed(b"ab") == [] and s.feed(b"c\r\nde") == ["abc"] and s.flush() == ["de"]
        cut = s.feed(b"x" * (MAX_LINE_BYTES + 10))
        assert len(cut) == 1 and cut[0].endswith(f"[cut at {MAX_LINE_BYTES} bytes]")
