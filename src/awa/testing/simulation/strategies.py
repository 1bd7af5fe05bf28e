"""Hypothesis-driven simulation: draw fault schedules, shrink a failure to a short story."""

from __future__ import annotations

from hypothesis import strategies as st

from awa.testing.simulation.world import Faults, Simulation, SimulationReport

__all__ = ["assert_simulation_holds", "fault_schedules", "simulations"]

_rate = st.sampled_from([0.0, 0.001, 0.01, 0.05, 0.2])


def fault_schedules() -> st.SearchStrategy[Faults]:
    """Fault rates from none to brutal; shrinking heads for fewer faults."""
    return st.builds(
        Faults,
        crash_rate=_rate,
        shutdown_rate=_rate,
        stall_rate=_rate,
        hang_rate=_rate,
        late_finish_rate=_rate,
        lost_wakeup_rate=_rate,
        clock_jump_rate=_rate,
        operator_rate=_rate,
        pause_rate=_rate,
        planning_pause_rate=_rate,
        restart_after_s=st.sampled_from([5.0, 30.0, 300.0]),
        stall_s=st.sampled_from([10.0, 60.0]),
        late_finish_s=st.sampled_from([10.0, 60.0]),
        clock_jump_s=st.sampled_from([30.0, 600.0]),
    )


def simulations(max_jobs: int = 30) -> st.SearchStrategy[Simulation]:
    """Small simulations: a failing one shrinks to few jobs, workers and steps."""
    return st.builds(
        lambda seed, jobs, workers, steps, faults: Simulation(
            seed, jobs=jobs, workers=workers, steps=steps, faults=faults, concurrency=2
        ),
        seed=st.integers(0, 2**32 - 1),
        jobs=st.integers(1, max_jobs),
        workers=st.integers(1, 3),
        steps=st.integers(0, 400),
        faults=fault_schedules(),
    )


def assert_simulation_holds(simulation: Simulation) -> SimulationReport:
    """Run it; on any violation fail with the whole (short) story and the seed."""
    report = simulation.run()
    if not report.ok:
        story = "\n".join(report.history)
        raise AssertionError(f"{report.summary()}\n--- the story ---\n{story}")
    return report
