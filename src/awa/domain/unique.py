"""Unique jobs: who holds a key, and what an insert or a retry does about the holder.

What a key is, and which state sets may hold one, is ``awa.domain.unique_keys``. A job holds
its key exactly while it is in one of its unique states (``holds_unique_key``). While it does,
no other job may enter its own states with the same key: an insert is refused
(``UniqueConflict``) or answered with the holder, and so is an operator's retry of a job that
gave its key up. Stores enforce the rule (PostgreSQL with a unique partial index over the same
predicate), so concurrent processes cannot break it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import attrs

from awa.domain.errors import UniqueConflict, ValidationError
from awa.domain.validation import shown
from awa.domain.values import Job

__all__ = [
    "ON_CONFLICT_CHOICES",
    "Blocked",
    "HeldBy",
    "OnConflict",
    "RepeatOf",
    "answer_inserts",
    "blocked_inserts",
    "check_on_conflict",
    "holds_unique_key",
    "refuse_blocked",
    "retakes_unique_key",
]

OnConflict = Literal["raise", "skip"]
ON_CONFLICT_CHOICES: tuple[OnConflict, ...] = ("raise", "skip")


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
