"""Render the transition table as Markdown with a Mermaid diagram (``docs/lifecycle.md``)."""

from __future__ import annotations

from awa.domain.rescue import RescueCause
from awa.domain.states import LIVE_STATES, TERMINAL_STATES, JobState
from awa.domain.transitions import INSERT_STATES, TRANSITIONS, Trigger
from awa.domain.values import DlqReason

__all__ = ["REGENERATE_COMMAND", "render_lifecycle_markdown"]

REGENERATE_COMMAND = "python tools/render_lifecycle.py > docs/lifecycle.md"


def _edges() -> dict[tuple[JobState, JobState], list[Trigger]]:
    edges: dict[tuple[JobState, JobState], list[Trigger]] = {}
    for (source, trigger), target in TRANSITIONS.items():
        if source is not target:
            edges.setdefault((source, target), []).append(trigger)
    return edges


def _mermaid() -> list[str]:
    lines = ["```mermaid", "stateDiagram-v2"]
    lines += [f"    [*] --> {state.value}: insert" for state in INSERT_STATES]
    for (source, target), triggers in _edges().items():
        label = " / ".join(t.value for t in triggers)
        lines.append(f"    {source.value} --> {target.value}: {label}")
    lines += [f"    {state.value} --> [*]" for state in JobState if state is JobState.COMPLETED]
    lines.append("```")
    return lines


def render_lifecycle_markdown() -> str:
    """The whole page; a test fails when ``docs/lifecycle.md`` differs from it."""
    lines = [
        "# The job lifecycle",
        "",
        "<!-- Generated from awa/domain/transitions.py. Do not edit by hand: run",
        f"     {REGENERATE_COMMAND} -->",
        "",
        "Every legal move of a job is one entry of `awa.domain.transitions.TRANSITIONS`,",
        "a `(state, trigger) -> state` table. A pair that is not in the table is an illegal",
        "move: stores refuse it and change nothing. This page is generated from that table.",
        "",
        "## Diagram",
        "",
        "Moves that keep the state (heartbeats, registering or extending a callback) are in",
        "the table below but left out of the diagram.",
        "",
        *_mermaid(),
        "",
        "## States",
        "",
        "| state | owned by a live attempt | terminal | accepts |",
        "| --- | --- | --- | --- |",
    ]
    for state in JobState:
        accepts = ", ".join(f"`{t.value}`" for (s, t) in TRANSITIONS if s is state) or "nothing"
        live = "yes" if state in LIVE_STATES else "no"
        terminal = "yes" if state in TERMINAL_STATES else "no"
        lines.append(f"| `{state.value}` | {live} | {terminal} | {accepts} |")
    lines += [
        "",
        "## Transitions",
        "",
        "| from | trigger | to |",
        "| --- | --- | --- |",
        *(
            f"| `{s.value}` | `{t.value}` | `{target.value}` |"
            for (s, t), target in TRANSITIONS.items()
        ),
        "",
        "## How maintenance ends an attempt nobody finished",
        "",
        "Each cause spends the attempt. While attempts remain the job is retried with backoff;",
        "on the last one it fails, and on a queue with the dead-letter queue enabled it moves",
        "there with the cause's reason.",
        "",
        "| cause | error recorded | dead-letter reason |",
        "| --- | --- | --- |",
        *(f"| {c.name.lower()} | `{c.error}` | `{c.dlq_reason.value}` |" for c in RescueCause),
        "",
        "## Dead-letter reasons",
        "",
        *(f"- `{reason.value}`" for reason in DlqReason),
        "- any text an operator gives to `move_to_dlq`",
        "",
    ]
    return "\n".join(lines)
