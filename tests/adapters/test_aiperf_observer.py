"""The live tap plugin: registered with AIPerf's plugin registry, disabled unless AQBENCH_TAP_DIR is set."""

from __future__ import annotations

from pathlib import Path

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
