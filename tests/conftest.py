"""Shared test fixtures: asyncio-only anyio backend, a check that no test leaves a process behind, the
session's headless Chromium (`browser`, from tests/browser.py) and default reference server, and the xdist
lanes."""

from __future__ import annotations

import compileall
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest

try:  # pytest 9's node ids; older pytest has none (and xdist's own grouping works there)
    from _pytest.nodeid import NodeId
except ImportError:  # pragma: no cover
    NodeId = None  # type: ignore[assignment,misc]
from browser import browser, browser_pids
from server_env import turn_warm_up_off

if TYPE_CHECKING:
    from _reference_server import Server
    from killed_soak import KilledSoak
    from reference_run import CleanRun
    from short_soaks import Running

__all__ = ["anyio_backend", "browser"]

# The reference servers the suite starts skip their warm-up pass unless a test asks for it (tests/server_env.py).
turn_warm_up_off()


# The suite starts hundreds of Python processes of this checkout (servers, aqbench commands, AIPerf with the live
# tap). Where PYTHONDONTWRITEBYTECODE is set (CI images often set it) none of them keeps its compiled modules, so
# each compiles every module it imports again (~0.3 CPU-s a process, measured): compile them once, in the
# controller, before any worker starts.
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    root = Path(__file__).resolve().parents[1]
    for package in ("orchestrator", "adapters", "datasets"):
        compileall.compile_dir(root / package, quiet=1, workers=1)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# Processes a module- or session-scoped fixture owns (a real server several tests read from): they outlive
# single tests, so they and their descendants are exempt from the leftover check; that fixture ends them.
_SHARED_PIDS: set[int] = set()


@pytest.fixture(scope="session")
def shared_processes() -> set[int]:
    """Add the pid of a process a wider-scoped fixture starts (and stops itself before it returns)."""
    return _SHARED_PIDS


@pytest.fixture(scope="session")
def default_server(tmp_path_factory: pytest.TempPathFactory, shared_processes: set[int]) -> Iterator[Server]:
    """The reference server on its default flags (trtmc-server's behaviour), started once for the adapter tests
    that only send it requests instead of once per test; at the end it stops on SIGINT with exit 0, as each
    test's own server had to."""
    # Imported here: tests/adapters joins sys.path only once its modules are collected (no package).
    from _reference_server import shared_reference_server

    with shared_reference_server(tmp_path_factory.mktemp("default-server"), shared_processes) as s:
        yield s


@pytest.fixture(scope="session")
def aa_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[CleanRun, CleanRun]:
    """Two `aqbench run-aiperf` runs of the same clean reference server, made at once and once per session:
    compare's A/A test compares them, and run-aiperf's clean-run test reads the first one's journal (one
    server and AIPerf start-up fewer than a run of its own)."""
    # Imported here: tests/e2e joins sys.path only once its modules are collected (no package).
    from reference_run import clean_runs_at_once

    return clean_runs_at_once(tmp_path_factory.mktemp("compare-aa"))


@pytest.fixture(scope="session")
def short_soaks(tmp_path_factory: pytest.TempPathFactory, shared_processes: set[int]) -> Iterator[dict[str, Running]]:
    """tests/e2e/test_soak.py's short soaks, started at once and once per session (tests/e2e/short_soaks.py):
    each test reads its own when it ends."""
    # Imported here: tests/e2e joins sys.path only once its modules are collected (no package).
    from short_soaks import short_soaks as start_short_soaks

    with start_short_soaks(tmp_path_factory, shared_processes) as runs:
        yield runs


@pytest.fixture(scope="session")
def killed_soak(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> KilledSoak:
    """One short real soak whose server is killed in window 2, watched on its live page where there is a browser:
    tests/e2e/test_soak.py reads its journal and tests/e2e/test_live.py its page (one soak for both). Without a
    browser it still runs, unwatched, and the page's test skips as the browser fixture says."""
    # Imported here: tests/e2e joins sys.path only once its modules are collected (no package).
    from killed_soak import run_killed_soak

    try:
        watcher = request.getfixturevalue("browser")
    except pytest.skip.Exception:
        watcher = None
    return run_killed_soak(tmp_path_factory.mktemp("killed-soak"), watcher)


def _is_shared(proc: psutil.Process) -> bool:
    try:
        return proc.pid in _SHARED_PIDS or any(p.pid in _SHARED_PIDS for p in proc.parents())
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(autouse=True)
def _no_leftover_processes():
    """Every test must end with no child process of ours still alive (zombies included), apart from those
    a shared fixture owns."""
    yield
    me = psutil.Process(os.getpid())
    left = []
    # The session's browser outlives each test on purpose; anything below its driver is the browser's.
    session = browser_pids()
    for child in me.children(recursive=True):
        if _is_shared(child):
            continue
        try:
            if session and (child.pid in session or any(p.pid in session for p in child.parents())):
                continue
            child.wait(timeout=5)
        except psutil.TimeoutExpired:
            left.append(f"{child.pid} {' '.join(child.cmdline())[:200]}")
            child.kill()
        except psutil.NoSuchProcess:
            pass
    assert not left, f"test left processes running: {left}"


# pyproject.toml's `timeout` (120 s) is every test's limit; a test marked slow gets this one unless it names
# its own with @pytest.mark.timeout. A test not marked slow may not raise its limit above the default.
SLOW_TIMEOUT_S = 600
DEFAULT_TIMEOUT_S = 120


# Under pytest-xdist (`-n 2 --dist loadgroup`, as .ci/run runs the suite) every test that starts a real server,
# AIPerf, Ray or the browser runs in this one group, on one worker and one at a time as without xdist: they
# load both cores, and their ports, process checks and timing assume no other such run beside them. The unit
# tests fill the other worker meanwhile. Marked `servers` where the path alone does not say it.
SERIAL_GROUP = "servers"
_SERIAL_DIRS = ("e2e", "adapters")
# Soaks last as long as their clock says, whatever the CPU left to them (they send fewer requests), while
# work-bound tests take longer beside the unit tests: the soaks run first, so the unit tests overlap them.
_CLOCK_BOUND = ("test_soak.py", "test_live.py")


def _beside(item: pytest.Item) -> bool:
    """Marked `beside`: starts real servers or AIPerf, but asserts nothing that another run beside it could move
    (no timing, no machine load): it leaves the serial lane and runs last, on whichever worker is free."""
    return item.get_closest_marker("beside") is not None


def _serial(item: pytest.Item) -> bool:
    if _beside(item):
        return False
    # A module of those folders marked `inprocess` runs only in-process code or stand-in executables: it does not
    # need the serial lane, and its CPU time is better spent beside the clock-bound soaks.
    in_dir = item.get_closest_marker("inprocess") is None and any(
        part in _SERIAL_DIRS for part in item.path.relative_to(Path(__file__).parent).parts[:-1])
    # The browser: the session's (the `browser` fixture) or a module's own (a ChromiumPage class).
    chromium = "browser" in getattr(item, "fixturenames", ()) or hasattr(getattr(item, "module", None), "ChromiumPage")
    return in_dir or chromium or any(item.get_closest_marker(m) is not None for m in ("servers", "aiperf"))


def _module_fixtures(item: pytest.Item) -> list[str]:
    """The module-scoped fixtures `item` uses (from pytest's fixture info on the test function)."""
    info = getattr(item, "_fixtureinfo", None)
    used = info.name2fixturedefs.items() if info else ()
    return sorted(name for name, defs in used if defs and defs[-1].scope == "module")


def _join_group(item: pytest.Item, group: str) -> None:
    """What pytest-xdist 3.8 does for xdist_group marks (their names sorted, joined by `_`): the group after an `@`
    in the node id, which its scheduler reads. Its own hook sets `_nodeid`, which pytest 9 no longer reads (the id is `_id`), so
    without this every group is split across the workers."""
    nodeid = f"{item.nodeid}@{group}"
    if NodeId is not None and hasattr(item, "_id") and not item.nodeid.endswith(f"@{group}"):
        item._id = NodeId.parse(nodeid)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    over = []
    ungrouped = []  # beside tests sharing a module fixture's run but no xdist group: each worker would make that run
    heavy_units: set[Path] = set()  # modules outside the serial lane with a slow or an in-process heavy test
    grouping = config.getoption("loadgroup", default=False)  # set in an xdist worker under --dist loadgroup
    for item in items:
        if not _serial(item):
            if any(item.get_closest_marker(m) is not None for m in ("slow", "inprocess")):
                heavy_units.add(item.path)
        else:
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))
        # The serial lane's group, or a group of `beside` tests that share a module fixture (one real run): the
        # whole group goes to one worker, so that run is made once, not once on each worker.
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                         for m in item.iter_markers("xdist_group")})
        if grouping and groups:
            _join_group(item, "_".join(groups))
        if _beside(item) and not groups and (shared := _module_fixtures(item)):
            ungrouped.append(f"{item.nodeid} ({', '.join(shared)})")
        limit = item.get_closest_marker("timeout")
        if item.get_closest_marker("slow") is None:
            if limit is not None and limit.args and limit.args[0] > DEFAULT_TIMEOUT_S:
                over.append(f"{item.nodeid} (timeout {limit.args[0]} s)")
        elif limit is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    # Then the modules outside the serial lane with slow tests (the static checks, the wheel build, the reference
    # engine's accuracy...): the other worker runs them while the soaks wait on their clocks, not beside the
    # serial lane's CPU-bound start-ups later. The serial lane's own order is unchanged; the sort is stable, so
    # each module stays whole and in order.
    # Tests marked `beside` go last: the unit tests' worker takes them once its own work is done, while the serial
    # lane is still busy (xdist hands out the serial group first, then single tests and the beside groups in this
    # order: pyproject.toml's --no-loadscope-reorder keeps it, where xdist would hand out every group first).
    # Among those, the single tests first (ab's blocks and the default qualify, the two longest real runs), then the
    # groups that share a shorter run: the long ones start while the serial lane still runs, and the short ones
    # fill in at the end on whichever worker is free.
    items.sort(key=lambda item: (_beside(item), _beside(item) and item.get_closest_marker("xdist_group") is not None,
                                 item.path.name not in _CLOCK_BOUND, _serial(item) or item.path not in heavy_units))
    if ungrouped:
        raise pytest.UsageError("tests marked beside that share a module fixture need an xdist_group mark (one per "
                                f"fixture's run), or each worker makes that run again: {ungrouped}")
    if over:
        raise pytest.UsageError(f"tests not marked slow may not exceed the {DEFAULT_TIMEOUT_S} s per-test timeout; "
                                f"mark them slow or make them faster: {over}")
