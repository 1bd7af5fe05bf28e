"""The real runtime in a seeded world of faults: laws hold, histories repeat, jobs finish."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from awa.testing.simulation import Faults, Simulation
from awa.testing.simulation.strategies import assert_simulation_holds, simulations

CI_SEEDS = 200
LOCAL_SEEDS = 20
SEEDS = range(CI_SEEDS if os.environ.get("CI") else LOCAL_SEEDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_thousand_jobs_under_every_fault_keep_every_law(seed: int) -> None:
    report = Simulation(seed, jobs=1000, workers=5).run()
    assert report.ok, report.summary() + f"\nreplay: {report.replay_command()}"
    finished = sum(report.final_states.values())
    assert finished == report.jobs_total > 1000  # with the periodic and unique ones
    assert report.counters.get("crashes", 0) + report.counters.get("stalls", 0) > 0


def test_the_same_seed_gives_the_same_history_byte_for_byte() -> None:
    first = Simulation(42, jobs=300, workers=3).run()
    second = Simulation(42, jobs=300, workers=3).run()
    assert first.history == second.history
    assert first.digest == second.digest
    assert Simulation(43, jobs=300, workers=3).run().digest != first.digest


def test_every_fault_kind_strikes_at_high_rates() -> None:
    brutal = Faults(
        crash_rate=0.01,
        stall_rate=0.01,
        hang_rate=0.05,
        late_finish_rate=0.01,
        lost_wakeup_rate=0.5,
        clock_jump_rate=0.005,
        operator_rate=0.01,
    )
    report = Simulation(7, jobs=1000, workers=5, faults=brutal).run()
    assert report.ok, report.summary()
    for fault in ("crashes", "stalls", "hangs", "late_finishes", "wakeups_lost", "clock_jumps"):
        assert report.counters.get(fault, 0) > 0, fault
    rescued = {k for k in report.counters if k.startswith("rescued_")}
    assert {"rescued_heartbeat_stale", "rescued_deadline_exceeded"} <= rescued
    assert report.counters.get("stale_finish_rejected", 0) > 0


def test_without_faults_every_job_finishes_and_nothing_is_rescued() -> None:
    report = Simulation(3, jobs=500, workers=2, faults=Faults.none()).run()
    assert report.ok, report.summary()
    assert not any(k.startswith("rescued_heartbeat") for k in report.counters)
    assert sum(report.final_states.values()) == report.jobs_total


def test_ten_thousand_jobs_with_faults_finish() -> None:
    report = Simulation(10_000, jobs=10_000, workers=5).run()
    assert report.ok, report.summary()
    assert sum(report.final_states.values()) == report.jobs_total


@settings(max_examples=25, deadline=None)
@given(simulations(max_jobs=20))
def test_drawn_fault_schedules_keep_every_law(simulation: Simulation) -> None:
    assert_simulation_holds(simulation)


def test_cli_prints_a_summary_with_the_digest() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "awa.testing.simulation", "--seed", "5", "--jobs", "200"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "invariant violations: 0" in result.stdout
    assert "digest " in result.stdout
    assert result.stderr == ""  # the simulated workers' own log lines are not the report
    again = subprocess.run(  # the same run through the `awa` command
        [sys.executable, "-m", "awa", "simulate", "--seed", "5", "--jobs", "200"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    digest = [line for line in result.stdout.splitlines() if line.startswith("digest")]
    assert digest == [line for line in again.stdout.splitlines() if line.startswith("digest")]


def test_cli_reports_bad_arguments_in_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "awa", "simulate", "--jobs", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "awa simulate: --jobs and --workers must be at least 1"


def test_the_run_shown_in_docs_is_what_the_command_prints() -> None:
    """docs/simulation.md shows a real run: when the runtime changes the history, run the
    command again and paste its output there."""
    page = (Path(__file__).parents[2] / "docs" / "simulation.md").read_text()
    command = page.split("```bash\n", 1)[1].split("\n", 1)[0]
    shown = page.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    args = command.split()[2:]  # after "awa simulate"
    result = subprocess.run(
        [sys.executable, "-m", "awa", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    printed = result.stdout.splitlines()

    def without_wall_time(lines: list[str]) -> list[str]:
        return [line for line in lines if not line.startswith("wall time")]

    assert without_wall_time(printed) == without_wall_time(shown), (
        f"docs/simulation.md is out of date: paste the output of `{command}`"
    )
