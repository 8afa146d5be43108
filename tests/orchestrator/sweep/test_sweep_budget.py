"""What fits in a sweep's --max-duration: leading loads by their schedules after one AIPerf start-up, the baseline
window bounded before the plan and as planned after it, the held first batch by its exit alone."""

from __future__ import annotations

import time

from orchestrator.sweep.budget import EXIT_S, START_S, Budget


def _budget(left_s: float, mode: str = "rate") -> Budget:
    # 24 requests a load (4 warmup + 20); the sweep started just now with `left_s` to go.
    return Budget(mode=mode, points=[1.0, 2.0], per=24, max_duration_s=left_s, started=time.monotonic())


def test_the_leading_loads_that_fit_after_one_start_up() -> None:
    """1 req/s takes 24 s, 2 req/s 12 s, after START_S of AIPerf: in 45 s only the first fits; without a limit all."""
    assert _budget(45.0).fit([1.0, 2.0], base=False) == [1.0]
    assert _budget(START_S + 36.5).fit([1.0, 2.0], base=False) == [1.0, 2.0]
    unlimited = Budget(mode="rate", points=[1.0], per=24, max_duration_s=None, started=time.monotonic())
    assert unlimited.fit([1.0, 2.0, 4.0], base=True) == [1.0, 2.0, 4.0]


def test_the_baseline_is_bounded_until_the_plan_states_it() -> None:
    """Before the plan the baseline window counts the gap of the lowest rate x its requests (24 s), which leaves no
    load in 45 s; once its planned time (1.6 s) is known, the first load fits beside it."""
    budget = _budget(45.0)
    assert budget.fit([1.0, 2.0], base=True) == []
    budget.base_s = 1.6
    assert budget.fit([1.0, 2.0], base=True) == [1.0]


def test_the_time_left_to_narrow_counts_what_is_spent_and_the_baseline() -> None:
    """A 180 s sweep whose server start and probe took 22 s, with a 5.9 s baseline and a 36 s grid (24 s + 12 s),
    leaves 180 - 22 - 5.9 - 36 - START_S to narrow the interval: not 180 - 36 - START_S; None without a limit."""
    budget = Budget(mode="rate", points=[1.0, 2.0], per=24, max_duration_s=180.0, started=time.monotonic() - 22.0)
    left = budget.after_grid_s(5.9)
    assert left is not None and abs(left - (180.0 - 22.0 - 5.9 - 36.0 - START_S)) < 0.5
    assert Budget(mode="rate", points=[1.0], per=24, max_duration_s=None, started=0.0).after_grid_s(5.9) is None


def test_the_held_batch_counts_the_exit_not_a_start_up() -> None:
    """AIPerf has started: the baseline (as planned) and the loads that fit before its exit run, the baseline
    counted among them; none when even the first does not fit."""
    assert _budget(30.0).fit_held([1.0, 2.0], base=True, base_s=1.6) == 2  # baseline + 1 req/s
    assert _budget(EXIT_S + 1.6 + 23.0).fit_held([1.0, 2.0], base=True, base_s=1.6) == 0


def test_a_closed_loop_is_paced_by_the_last_batch() -> None:
    """No schedule in a closed loop: before any batch a load counts nothing; after one, its time per load."""
    budget = _budget(35.0, mode="concurrency")
    assert budget.fit([1.0, 2.0, 4.0], base=False) == [1.0, 2.0, 4.0]
    budget.spent(elapsed_s=40.0, sending_s=30.0, loads=3)  # 10 s beyond the sending: at least START_S
    assert (budget.overhead_s, budget.point_s) == (10.0, 10.0)
    assert budget.fit([1.0, 2.0, 4.0], base=False) == [1.0, 2.0]
    assert budget.need_s(4.0, pace_s=3.0) == 10.0 + EXIT_S
