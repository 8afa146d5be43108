"""Every subcommand's parser holds the one grammar of docs/cli.md: durations, rates, --json, --out, --strict,
--config and the model's NAME, with old spellings kept one release behind a deprecation line."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from adapters.reference.serve import add_server_arguments
from orchestrator.cli import build_parser, main
from orchestrator.config.flags import DURATION_EXAMPLES

_SECONDS = {"90": 90.0, "90s": 90.0, "5m": 300.0, "8h": 28800.0}
# A unit in a flag's name: seconds, minutes or hours (milliseconds stay: --p99-latency-ms is a threshold).
_UNIT_NAME = re.compile(r"\w-(s|secs?|seconds|m|mins?|minutes|h|hours?)$")
# Help that speaks of a time the flag takes.
_TIME_WORDS = re.compile(r"\b(seconds|timeout|delay|how long|duration|time between|this often|session time|"
                         r"soak time|sweep time|length of one window)\b", re.I)


def _parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (sub)command's parser, by its command line; serve-reference with its flags added."""
    stack: list[tuple[str, argparse.ArgumentParser]] = [("aqbench", build_parser())]
    while stack:
        name, parser = stack.pop()
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if name.endswith("serve-reference"):
            add_server_arguments(parser)
        if not subs:
            yield name, parser
        for sub in subs:
            stack.extend((f"{name} {cmd}", p) for cmd, p in sub.choices.items())


PARSERS = dict(_parsers())


def _options() -> Iterator[tuple[str, argparse.Action]]:
    for name, parser in PARSERS.items():
        for action in parser._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                yield name, action


OPTIONS = list(_options())


def _flag(action: argparse.Action) -> str:
    return action.option_strings[-1]


class TestGrammar:
    def test_every_command_is_walked(self):
        """The walk reaches every command, nested ones and serve-reference's lazily added flags included."""
        assert {"aqbench ab", "aqbench config check", "aqbench config reference", "aqbench soak",
                "aqbench serve-reference", "aqbench run-aiperf"} <= set(PARSERS)
        assert any(_flag(a) == "--fault-startup-delay" for _, a in OPTIONS)

    @pytest.mark.parametrize("text", DURATION_EXAMPLES)
    def test_every_duration_flag_takes_every_form(self, text: str):
        """Each flag that takes a time (metavar DURATION) parses 90, 90s, 5m and 8h, as seconds."""
        durations = [(n, a) for n, a in OPTIONS if a.metavar == "DURATION"]
        assert len(durations) >= 10
        for name, action in durations:
            assert callable(action.type), (name, _flag(action))
            assert action.type(text) == _SECONDS[text], f"{name} {_flag(action)} {text}"

    def test_no_unit_in_a_flag_name(self):
        """No flag carries seconds, minutes or hours in its name (deprecated spellings are hidden)."""
        assert [(n, s) for n, a in OPTIONS for s in a.option_strings if _UNIT_NAME.search(s)] == []

    def test_a_flag_about_time_takes_a_duration(self):
        """A flag whose help speaks of a time it takes is a DURATION flag; not milliseconds, not a point in time
        (ingest's --since/--until T), not a choice among names."""
        wrong = [(n, _flag(a)) for n, a in OPTIONS
                 if a.nargs != 0 and _TIME_WORDS.search(a.help or "") and not _flag(a).endswith("-ms")
                 and a.metavar not in ("DURATION", "T") and a.choices is None]
        assert wrong == []

    def test_one_spelling_each(self):
        """--rate/--rates name a request rate; --json is [FILE.json]; --config PATH defaults to bench.toml;
        --model is NAME; --strict makes an inconclusive verdict exit 1; --out is a DIR or FILE."""
        for name, action in OPTIONS:
            flag = _flag(action)
            assert "request-rate" not in flag, (name, flag)
            if flag == "--json":
                assert (action.nargs, action.const, action.metavar) == ("?", "-", "FILE.json"), name
            if flag == "--config":
                assert (action.default, action.metavar) == ("bench.toml", "PATH"), name
                assert "default: bench.toml" in (action.help or ""), name
            if flag == "--model":
                assert action.metavar == "NAME", name
            if flag == "--strict":
                assert action.nargs == 0 and "exit 1 when any" in (action.help or "") \
                    and "inconclusive" in (action.help or ""), name
            if flag == "--out":
                assert action.metavar in ("DIR", "FILE"), name
            if flag in ("--rate", "--rates"):
                assert action.metavar in ("R", "R,R,..."), name


class TestDeprecatedSpellings:
    @pytest.mark.parametrize("argv, dest, value", [
        (["run-aiperf", "--request-rate", "2"], "rate", 2.0),
        (["run-aiperf", "--match-timeout-s", "7"], "match_timeout", 7.0),
        (["sweep", "--match-timeout-s", "7"], "match_timeout", 7.0),
        (["ingest", "x.log", "--strict"], "fail_on_bad_line", True),
        (["ingest", "x.log", "--summary-json"], "json", "-"),
    ])
    def test_old_spelling_parses_as_the_new(self, argv: list[str], dest: str, value: object):
        """An old spelling still sets what its new flag sets."""
        assert getattr(build_parser().parse_args(argv), dest) == value

    def test_old_spelling_says_so_in_the_stream_format(self, tmp_path, capsys: pytest.CaptureFixture[str]):
        """Using an old spelling prints one deprecation line naming the new one, as a JSON record beside JSON logs."""
        log = tmp_path / "x.log"
        log.write_text("")
        main(["--log-format", "json", "ingest", str(log), "--summary-json"])
        err = capsys.readouterr().err.splitlines()
        assert any('"event":"say"' in line and "--summary-json is deprecated" in line and "use --json" in line
                   for line in err), err
        assert all(line.startswith("{") for line in err), err


class TestDurations:
    def test_ab_max_duration_takes_minutes(self):
        """`aqbench ab --max-duration 4m` parses to 240 s (it failed with 'invalid float value')."""
        args = build_parser().parse_args(["ab", "--baseline", "a.toml", "--candidate", "b.toml", "--max-duration", "4m"])
        assert args.max_duration == 240.0

    def test_a_bad_duration_names_the_flag_and_the_forms(self, capsys: pytest.CaptureFixture[str]):
        """A value that is no duration is a usage error (exit 2) naming the flag and the forms it takes."""
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args(["soak", "--duration", "4x"])
        assert exc.value.code == 2
        assert "argument --duration: '4x' is not a positive duration; use e.g. 90, 90s, 5m, 8h" \
            in capsys.readouterr().err
