"""What a simulation run reports: jobs by final state, dead letters by reason, the counters
the recorder kept, the violations it found, and the digest of its history (one seed, one
digest)."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["SimulationReport"]


@attrs.frozen
class SimulationReport:
    seed: int
    jobs: int
    steps: int
    simulated_s: float
    final_states: dict[str, int]
    dlq_reasons: dict[str, int]
    counters: dict[str, int]
    violations: tuple[str, ...]
    digest: str
    history: tuple[str, ...] = attrs.field(repr=False)
    #: every job the run created: the seeded ones, periodic fires and unique inserts
    jobs_total: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    def replay_command(self, **options: Any) -> str:
        flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in options.items())
        return f"awa simulate --seed {self.seed} --jobs {self.jobs} {flags}".strip()

    def summary(self) -> str:
        lines = [
            f"seed {self.seed}: {self.jobs} jobs (and {self.jobs_total - self.jobs} scheduled"
            f" ones), {self.steps} steps,"
            f" {self.simulated_s:,.0f} s simulated",
            "jobs by final state: "
            + ", ".join(f"{k} {v}" for k, v in sorted(self.final_states.items())),
            "dead-lettered by reason: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.dlq_reasons.items())) or "none"),
            "rescues by cause: "
            + (
                ", ".join(
                    f"{k.removeprefix('rescued_')} {v}"
                    for k, v in sorted(self.counters.items())
                    if k.startswith("rescued_")
                )
                or "none"
            ),
            f"stale finishes rejected: {self.counters.get('stale_finish_rejected', 0)},"
            f" stale heartbeats rejected: {self.counters.get('stale_heartbeat_rejected', 0)}",
            "faults: "
            + ", ".join(
                f"{k} {self.counters.get(k, 0)}"
                for k in (
                    "crashes",
                    "shutdowns",
                    "stalls",
                    "hangs",
                    "late_finishes",
                    "wakeups_lost",
                    "clock_jumps",
                    "operator_actions",
                    "pauses",
                )
            ),
            f"periodic jobs enqueued: {self.counters.get('fires', 0)}, stale fires refused:"
            f" {self.counters.get('stale_fires_refused', 0)}; unique inserts:"
            f" {self.counters.get('unique_inserted', 0)}, refused"
            f" {self.counters.get('unique_refused', 0)}, skipped"
            f" {self.counters.get('unique_skipped', 0)}",
            f"digest {self.digest}",
            f"invariant violations: {len(self.violations)}",
        ]
        lines += [f"  {v}" for v in self.violations[:20]]
        return "\n".join(lines)
