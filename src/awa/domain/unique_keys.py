"""Unique keys: what makes two jobs duplicates, and which state sets may hold a key.

A unique insert gives the job a key: a digest of its kind, optionally its queue, the canonical
JSON of its args (or of chosen fields), and the length of the period, plus the number of the
period its ``run_at`` falls in (``unique_key_at``). Who holds a key, and what an insert does
about a holder, is ``awa.domain.unique``.

Which state sets are safe follows from the transition table (``unsafe_move``): a job may take
its key back only through a move that can be refused, an insert or an operator's retry. Every
other move (a claim, a retry after an error, a rescue, a callback's answer) happens on its
own and cannot be refused, so it must never carry a job from outside its states into them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs

from awa.domain.errors import ValidationError
from awa.domain.states import TERMINAL_STATES, JobState
from awa.domain.transitions import TRANSITIONS, Trigger
from awa.domain.validation import DURATION_MAX_S, check_state, shown

__all__ = [
    "DEFAULT_UNIQUE_STATES",
    "REFUSABLE_TRIGGERS",
    "Unique",
    "check_unique_states",
    "period_number",
    "unique_key_at",
    "unsafe_move",
]

#: every state but ``failed`` and ``cancelled``: a duplicate waits for the holder to finish,
#: and a job that completed keeps blocking; one that failed or was cancelled does not
DEFAULT_UNIQUE_STATES = frozenset(JobState) - {JobState.FAILED, JobState.CANCELLED}
#: the moves that can be refused when another job holds the key: nothing else may retake one
REFUSABLE_TRIGGERS = frozenset({Trigger.OPERATOR_RETRY, Trigger.OPERATOR_RETRY_LATER})

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_MICROSECOND = timedelta(microseconds=1)


def unsafe_move(states: Iterable[JobState]) -> tuple[JobState, Trigger, JobState] | None:
    """A move of the table that nobody can refuse and that carries a job from outside
    ``states`` into them (it would retake a key another job may hold), or ``None``."""
    inside = frozenset(states)
    for (state, trigger), target in TRANSITIONS.items():
        if trigger not in REFUSABLE_TRIGGERS and target in inside and state not in inside:
            return state, trigger, target
    return None


def _safe_closure(states: frozenset[JobState]) -> frozenset[JobState]:
    """``states`` plus every state an unrefusable move can come from: the smallest safe set
    holding them."""
    while (move := unsafe_move(states)) is not None:
        states = states | {move[0]}
    return states


def _names(states: Iterable[JobState]) -> str:
    return ", ".join(s.value for s in JobState if s in frozenset(states))


def check_unique_states(states: object) -> frozenset[JobState]:
    """A non-empty, safe set of states (values or members)."""
    if isinstance(states, (str, JobState)) or not isinstance(states, Iterable):
        raise ValidationError(f"unique states come as a set of states, got {shown(states)}")
    checked = frozenset(check_state(state) for state in states)
    if not checked:
        raise ValidationError("unique states must name at least one state")
    move = unsafe_move(checked)
    if move is not None:
        state, trigger, target = move
        missing = _safe_closure(checked) - checked
        raise ValidationError(
            f"unique states {{{_names(checked)}}} are not safe: {trigger.value} moves a job"
            f" from {state.value} into {target.value} on its own, where another job may hold"
            f" the key; add {_names(missing)} (any of {_names(TERMINAL_STATES)} may be added"
            " or left out)"
        )
    return checked


def _by_args(value: object) -> bool | tuple[str, ...]:
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValidationError(
            f"by_args is True, False or a list of field names, got {shown(value)}"
        )
    fields = tuple(value)
    if not fields or not all(isinstance(f, str) and f for f in fields):
        raise ValidationError(
            f"by_args names at least one field, each a string, got {shown(value)}"
        )
    return tuple(sorted(set(fields)))


def _period(value: object) -> int | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or seconds != int(seconds)
        or not 1 <= seconds <= DURATION_MAX_S
    ):
        raise ValidationError(
            f"a unique period is a whole number of seconds from 1 to {DURATION_MAX_S:.0f}"
            f" (or a timedelta), got {shown(value)}"
        )
    return int(seconds)


def _by_queue(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"by_queue must be True or False, got {shown(value)}")
    return value


@attrs.frozen
class Unique:
    """What makes two jobs duplicates, and while a job blocks its duplicates.

    The key always covers the kind; ``by_args`` adds the args (``True``) or only the named
    fields; ``by_queue`` adds the queue; ``period`` (seconds or a ``timedelta``) adds the
    period the job's ``run_at`` falls in, counted from the Unix epoch, so at most one job per
    period. The job holds the key while it is in one of ``states``.
    """

    by_args: bool | tuple[str, ...] = attrs.field(default=True, converter=_by_args)
    by_queue: bool = attrs.field(default=False, converter=_by_queue)
    period: int | None = attrs.field(default=None, converter=_period)
    states: frozenset[JobState] = attrs.field(
        default=DEFAULT_UNIQUE_STATES, converter=check_unique_states
    )

    def digest(self, kind: str, queue: str, args: Mapping[str, Any]) -> str:
        """The key without its period number: equal for duplicates, in any process. What it
        covers is joined by a separator no kind or queue name can hold, the args as canonical
        JSON (keys sorted, no spaces)."""
        if self.by_args is True:
            covered = _CANONICAL.encode(args)
        elif self.by_args:
            covered = _CANONICAL.encode({name: args[name] for name in self.by_args if name in args})
        else:
            covered = "-"
        scope = queue if self.by_queue else ""
        period = "" if self.period is None else str(self.period)
        text = f"{kind}\x1f{scope}\x1f{period}\x1f{self.by_args is True}\x1f{covered}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def period_number(moment: datetime, period_s: int) -> int:
    """Which period of ``period_s`` seconds since the Unix epoch ``moment`` falls in (exact:
    whole microseconds, no floating point)."""
    return ((moment - _EPOCH) // _MICROSECOND) // (period_s * 1_000_000)


def unique_key_at(digest: str, period_s: int | None, run_at: datetime) -> str:
    """The key a job with this digest takes when it runs at ``run_at``."""
    if period_s is None:
        return digest
    return f"{digest}:{period_number(run_at, period_s)}"
