"""Unique jobs: which key a job holds, and while it holds it.

A unique insert gives the job a key: a digest of its kind, optionally its queue, the canonical
JSON of its args (or of chosen fields), and the length of the period, plus the number of the
period its ``run_at`` falls in. The job holds its key exactly while it is in one of its unique
states (``holds_unique_key``). While it does, no other job may enter its own states with the
same key: an insert is refused (``UniqueConflict``) or answered with the holder, and so is an
operator's retry of a job that gave its key up. Stores enforce the rule (PostgreSQL with a
unique partial index over the same predicate), so concurrent processes cannot break it.

Which state sets are safe follows from the transition table (``unsafe_move``): a job may take
its key back only through a move that can be refused, an insert or an operator's retry. Every
other move (a claim, a retry after an error, a rescue, a callback's answer) happens on its
own and cannot be refused, so it must never carry a job from outside its states into them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Literal

import attrs

from awa.domain.errors import UniqueConflict, ValidationError
from awa.domain.states import TERMINAL_STATES, JobState
from awa.domain.transitions import TRANSITIONS, Trigger
from awa.domain.validation import DURATION_MAX_S, check_state, shown

if TYPE_CHECKING:
    from awa.domain.values import Job

__all__ = [
    "DEFAULT_UNIQUE_STATES",
    "ON_CONFLICT_CHOICES",
    "REFUSABLE_TRIGGERS",
    "Blocked",
    "HeldBy",
    "OnConflict",
    "RepeatOf",
    "Unique",
    "answer_inserts",
    "blocked_inserts",
    "check_on_conflict",
    "check_unique_states",
    "holds_unique_key",
    "period_number",
    "refuse_blocked",
    "retakes_unique_key",
    "unique_key_at",
    "unsafe_move",
]

#: every state but ``failed`` and ``cancelled``: a duplicate waits for the holder to finish,
#: and a job that completed keeps blocking; one that failed or was cancelled does not
DEFAULT_UNIQUE_STATES = frozenset(JobState) - {JobState.FAILED, JobState.CANCELLED}
#: the moves that can be refused when another job holds the key: nothing else may retake one
REFUSABLE_TRIGGERS = frozenset({Trigger.OPERATOR_RETRY, Trigger.OPERATOR_RETRY_LATER})

OnConflict = Literal["raise", "skip"]
ON_CONFLICT_CHOICES: tuple[OnConflict, ...] = ("raise", "skip")

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


def holds_unique_key(job: Job) -> bool:
    """Whether ``job`` holds its key now: it has one and is in one of its unique states. This
    speaks of a job among the jobs: a job in the dead-letter queue holds no key."""
    return job.unique_key is not None and job.state in job.unique_states


def retakes_unique_key(before: Job | None, after: Job) -> bool:
    """Whether a move from ``before`` (``None``: the job was not among the jobs) to ``after``
    takes the key back: only such a move can meet another holder."""
    return holds_unique_key(after) and (before is None or not holds_unique_key(before))


def check_on_conflict(value: object) -> OnConflict:
    if value not in ON_CONFLICT_CHOICES:
        raise ValidationError(f"on_conflict is 'raise' or 'skip', got {shown(value)}")
    return value


# -- inserts --------------------------------------------------------------------------------


@attrs.frozen
class HeldBy:
    """The job that holds the key this insert would take."""

    holder: Job


@attrs.frozen
class RepeatOf:
    """An earlier job of the same insert takes this key first."""

    index: int


Blocked = HeldBy | RepeatOf


def blocked_inserts(
    keys: Sequence[str | None], holder_of: Callable[[str], Job | None]
) -> dict[int, Blocked]:
    """Which jobs of one insert may not take their key, by position: those whose key a job
    holds already, and later repeats of a key within the insert."""
    first: dict[str, int] = {}
    blocked: dict[int, Blocked] = {}
    for index, key in enumerate(keys):
        if key is None:
            continue
        holder = holder_of(key)
        if holder is not None:
            blocked[index] = HeldBy(holder)
        elif key in first:
            blocked[index] = RepeatOf(first[key])
        else:
            first[key] = index
    return blocked


def refuse_blocked(blocked: Mapping[int, Blocked], on_conflict: OnConflict) -> None:
    """With ``on_conflict="raise"`` a blocked job refuses the whole insert (nothing is
    inserted): ``UniqueConflict`` naming the holder, or ``ValidationError`` for a key the
    insert repeats."""
    if not blocked or on_conflict == "skip":
        return
    index = min(blocked)
    reason = blocked[index]
    if isinstance(reason, HeldBy):
        holder = reason.holder
        raise UniqueConflict(holder.id, holder.kind, holder.state.value)
    raise ValidationError(
        f"jobs {reason.index} and {index} of this insert have the same unique key; insert"
        " one of them, or pass on_conflict='skip'"
    )


def answer_inserts(
    requested: int, inserted: Sequence[Job], blocked: Mapping[int, Blocked]
) -> list[Job]:
    """One job per requested position: the inserted jobs in order, and for a blocked one the
    job that holds its key (``on_conflict="skip"``)."""
    fresh = iter(inserted)
    answer: list[Job] = []
    for index in range(requested):
        reason = blocked.get(index)
        if reason is None:
            answer.append(next(fresh))
        elif isinstance(reason, HeldBy):
            answer.append(reason.holder)
        else:
            answer.append(answer[reason.index])
    return answer
