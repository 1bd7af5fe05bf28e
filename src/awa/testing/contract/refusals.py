"""The contract of refusals: every input a store must refuse, as one table.

Each row of ``REFUSALS`` is one distinct check at one verb of ``ClaimStore``: the verb, the bad
arguments, the error and a fragment of its message. Every store runs every row against a store
holding a little of everything (a running attempt, a parked callback, a failed job, a finished
job, a dead-letter entry, a due scheduled job, a paused queue, a schedule, a leader) and must
raise that error, in one line, with nothing changed. A refusal one adapter makes is a row here,
so every adapter makes it the same way.

Arguments only the store under test can supply (a live lease, a pending callback id) are
``Given`` placeholders in the table; ``Refusal.arguments`` fills them in. A row for the verb of
an optional capability (``subscribe``, of ``awa.ports.Listens``) names it, and a store without
the capability skips that row.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from awa.adapters.memory import ManualClock
from awa.domain import (
    Complete,
    CompleteCallback,
    Fail,
    Job,
    JobState,
    Lease,
    NewJob,
    Schedule,
    Unique,
    ValidationError,
)
from awa.ports import (
    BATCH_SIZE_MAX,
    ClaimStore,
    Finish,
    Heartbeat,
    Listens,
    SummarizesQueues,
    TracksWorkers,
)
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _park

__all__ = ["REFUSALS", "Given", "Refusal", "RefusalContract"]


class Given(enum.Enum):
    """A value only the store under test can supply, filled in when a row runs."""

    LIVE_LEASE = "the lease of a running attempt"
    PENDING_CALLBACK = "the id of the callback a parked attempt waits on"
    FAILED_JOB = "the id of a failed job on a queue without a dead-letter queue"


@attrs.frozen
class Refusal:
    """One row: ``store.<verb>(*args, **kwargs)`` raises ``error``, its message holding
    ``fragment``; ``capability`` names the optional Protocol the verb belongs to, if any."""

    verb: str
    what: str
    error: type[Exception]
    fragment: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    capability: type | None = None

    @property
    def id(self) -> str:
        return f"{self.verb}-{self.what.replace(' ', '_')}"

    def arguments(self, given: Mapping[Given, object]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The row's arguments with each ``Given`` replaced by ``given[...]``."""
        args = tuple(_fill(a, given) for a in self.args)
        return args, {k: _fill(v, given) for k, v in self.kwargs.items()}


def _fill(value: Any, given: Mapping[Given, object]) -> Any:
    if isinstance(value, Given):
        return given[value]
    if isinstance(value, list):
        return [_fill(v, given) for v in value]
    if isinstance(value, Finish):
        lease = _fill(value.lease, given)
        claimed = _claimed_earlier(lease) if value.claimed is EARLIER else value.claimed
        return attrs.evolve(value, lease=lease, claimed=claimed)
    if isinstance(value, Heartbeat):
        return attrs.evolve(value, lease=_fill(value.lease, given))
    return value


def _claimed_earlier(lease: Lease) -> Job:
    at = datetime(2030, 1, 1, tzinfo=timezone.utc)
    return Job(
        id=lease.job_id, kind="busy", queue="busy", args={}, state=JobState.RUNNING,
        priority=2, attempt=1, max_attempts=25, run_lease=lease.run_lease - 1, run_at=at,
        created_at=at,
    )  # fmt: skip


def _row(
    verb: str, what: str, fragment: str, *args: Any, capability: type | None = None, **kwargs: Any
) -> Refusal:
    return Refusal(verb, what, ValidationError, fragment, args, kwargs, capability)


# typed ``Any`` so a placeholder can stand where a ``Lease`` or an id is expected
LIVE: Any = Given.LIVE_LEASE
CALLBACK: Any = Given.PENDING_CALLBACK
FAILED: Any = Given.FAILED_JOB
#: a finish's claimed job as an earlier attempt claimed it: the live lease's job, an older
#: run_lease (filled in from the row's lease)
EARLIER: Any = object()
TOO_MANY = BATCH_SIZE_MAX + 1
UNKNOWN_CALLBACK = "no-such-callback"
BAD_LEASE = Lease("1; --", 1)  # type: ignore[arg-type]
BOOL_LEASE = Lease(1, True)
#: an integer Python will not even print (over 4,300 digits): refused, not a ValueError
HUGE = 10**5000
#: instants inside Python's range as given, outside it (or the bounds) once in UTC
_YEAR_1 = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14)))
_PAST_9999 = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-14)))

CLAIMED = "claimed job must be the Job that holds its lease"
LIST = "as a list"
LIMIT = "limit must be"
QUEUE = "invalid queue name"
KIND = "invalid job kind"
JOB_ID = "job id"
FLAG = "True or False"
NUL = "NUL"
DEADLINE = "deadline_duration"
TIMEOUT = "callback timeout"
CALLBACK_ID = "callback id"
STALENESS = "staleness"
TW = TracksWorkers
OLDER = "older_than"
LEADER = "leader"
TTL = "ttl"
REASON = "reason"
NO_FILTER = "give a queue or kind"
RETENTION = "retention must be"
SCHEDULE = "invalid schedule name"
NIGHTLY = Schedule(name="nightly", cron="0 3 * * *", job=NewJob(kind="report"))
TAG = "tag"
WINDOW = "summary window"
NAN = float("nan")
INF = float("inf")
CONC = "concurrency_limit must be"
RATE = "rate_limit is (per_second, burst)"
BURST = "rate_limit burst must be"
PER_SECOND = "rate_limit per_second must be"

REFUSALS: tuple[Refusal, ...] = (
    # -- insert ------------------------------------------------------------------------------
    _row("insert", "one job not in a list", LIST, NewJob(kind="k")),
    _row("insert", "a string", LIST, "jobs"),
    _row("insert", "not NewJob values", "expected NewJob", [{"kind": "k"}]),
    _row("insert", "too many jobs", "at most", [NewJob(kind="k")] * TOO_MANY),
    _row("insert", "on_conflict unknown", "on_conflict", [NewJob(kind="k")], on_conflict="ignore"),
    _row("insert", "on_conflict None", "on_conflict", [NewJob(kind="k")], on_conflict=None),
    # -- cancel_by_unique_key ----------------------------------------------------------------
    _row("cancel_by_unique_key", "a job without a key", "no unique key", NewJob(kind="k")),
    _row("cancel_by_unique_key", "a kind not a job", "expected NewJob", "k"),
    _row(
        "cancel_by_unique_key",
        "a list of jobs",
        "expected NewJob",
        [NewJob(kind="k", unique=Unique())],
    ),
    # -- claim -------------------------------------------------------------------------------
    _row("claim", "empty queue", QUEUE, "", limit=1),
    _row("claim", "queue with spaces and SQL", QUEUE, "Bad Queue; --", limit=1),
    _row("claim", "queue not a string", QUEUE, None, limit=1),
    _row("claim", "limit 0", LIMIT, "default", limit=0),
    _row("claim", "limit too big", LIMIT, "default", limit=TOO_MANY),
    _row("claim", "limit a bool", LIMIT, "default", limit=True),
    _row("claim", "limit a string", LIMIT, "default", limit="10"),
    _row("claim", "negative deadline", DEADLINE, "default", limit=1, deadline_duration_s=-1),
    _row("claim", "deadline of 1e12 s", DEADLINE, "default", limit=1, deadline_duration_s=1e12),
    _row("claim", "deadline NaN", DEADLINE, "default", limit=1, deadline_duration_s=float("nan")),
    _row("claim", "deadline a string", DEADLINE, "default", limit=1, deadline_duration_s="60"),
    _row("claim", "negative aging", "priority_aging", "default", limit=1, priority_aging_s=-1),
    _row("claim", "aging NaN", "priority_aging", "default", limit=1, priority_aging_s=float("nan")),
    _row("claim", "limit of 5,000 digits", LIMIT, "default", limit=HUGE),
    _row(
        "claim", "deadline of 5,000 digits", DEADLINE, "default", limit=1, deadline_duration_s=HUGE
    ),
    # -- heartbeat ---------------------------------------------------------------------------
    _row("heartbeat", "one beat not in a list", LIST, Heartbeat(LIVE)),
    _row("heartbeat", "a lease not a Heartbeat", "expected Heartbeat", [LIVE]),
    _row("heartbeat", "too many beats", "at most", [Heartbeat(LIVE)] * TOO_MANY),
    _row("heartbeat", "NUL in progress", NUL, [Heartbeat(LIVE, progress={"p": "\x00"})]),
    _row("heartbeat", "progress not an object", "JSON object", [Heartbeat(LIVE, progress=[1])]),  # type: ignore[arg-type]
    _row("heartbeat", "lease job id not an integer", "lease", [Heartbeat(BAD_LEASE)]),
    _row("heartbeat", "lease run_lease a bool", "run_lease is an integer", [Heartbeat(BOOL_LEASE)]),
    _row("heartbeat", "lease job id past 64 bits", "64-bit", [Heartbeat(Lease(2**63, 1))]),
    _row("heartbeat", "lease run_lease of 5,000 digits", "64-bit", [Heartbeat(Lease(1, HUGE))]),
    _row(
        "heartbeat",
        "good beat beside a bad one",
        NUL,
        [Heartbeat(LIVE, progress={"p": 1}), Heartbeat(LIVE, metadata={"m": "\x00"})],
    ),
    # -- release -----------------------------------------------------------------------------
    _row("release", "one lease not in a list", LIST, LIVE),
    _row("release", "a Heartbeat not a lease", "expected Lease", [Heartbeat(LIVE)]),
    _row("release", "too many leases", "at most", [LIVE] * TOO_MANY),
    _row("release", "lease job id not an integer", "lease", [LIVE, BAD_LEASE]),
    # -- finish ------------------------------------------------------------------------------
    _row("finish", "one finish not in a list", LIST, Finish(LIVE, Complete())),
    _row("finish", "a lease not a Finish", "expected Finish", [LIVE]),
    _row("finish", "too many finishes", "at most", [Finish(LIVE, Complete())] * TOO_MANY),
    _row("finish", "NUL in metadata", NUL, [Finish(LIVE, Complete(), metadata={"m": "\x00"})]),
    _row(
        "finish",
        "NaN in progress",
        "JSON",
        [Finish(LIVE, Complete(), progress={"p": float("nan")})],
    ),
    _row("finish", "outcome a string", "outcome", [Finish(LIVE, "done")]),  # type: ignore[arg-type]
    _row("finish", "lease job id not an integer", "lease", [Finish(BAD_LEASE, Complete())]),
    _row(
        "finish",
        "claimed not a job",
        CLAIMED,
        [Finish(LIVE, Complete(), claimed="job")],  # type: ignore[arg-type]
    ),
    _row(
        "finish",
        "claimed by an earlier attempt",
        CLAIMED,
        [Finish(LIVE, Fail("x"), claimed=EARLIER)],
    ),
    _row(
        "finish",
        "good finish beside a bad one",
        NUL,
        [Finish(LIVE, Complete()), Finish(LIVE, Complete(), metadata={"\x00": 1})],
    ),
    # -- register_callback -------------------------------------------------------------------
    _row("register_callback", "a job id not a lease", "Lease", FAILED),
    _row("register_callback", "timeout 0", TIMEOUT, LIVE, timeout_s=0),
    _row("register_callback", "timeout of 1e12 s", TIMEOUT, LIVE, timeout_s=1e12),
    _row("register_callback", "timeout of 5,000 digits", TIMEOUT, LIVE, timeout_s=HUGE),
    _row("register_callback", "empty callback id", CALLBACK_ID, LIVE, callback_id=""),
    _row("register_callback", "blank callback id", CALLBACK_ID, LIVE, callback_id="  "),
    _row("register_callback", "callback id not a string", CALLBACK_ID, LIVE, callback_id=123),
    _row("register_callback", "NUL in callback id", NUL, LIVE, callback_id="a\x00b"),
    _row("register_callback", "callback id too long", "at most", LIVE, callback_id="x" * 257),
    # -- resolve_callback --------------------------------------------------------------------
    _row("resolve_callback", "callback id not a string", CALLBACK_ID, 123, CompleteCallback()),
    _row("resolve_callback", "empty callback id", CALLBACK_ID, "", CompleteCallback()),
    _row("resolve_callback", "handler outcome not a resolution", "answered", CALLBACK, Complete()),
    # -- heartbeat_callback ------------------------------------------------------------------
    _row("heartbeat_callback", "unknown id timeout -1", TIMEOUT, UNKNOWN_CALLBACK, timeout_s=-1),
    _row("heartbeat_callback", "timeout 0", TIMEOUT, CALLBACK, timeout_s=0),
    _row("heartbeat_callback", "timeout of 1e12 s", TIMEOUT, CALLBACK, timeout_s=1e12),
    _row("heartbeat_callback", "timeout of 5,000 digits", TIMEOUT, CALLBACK, timeout_s=HUGE),
    _row("heartbeat_callback", "empty callback id", CALLBACK_ID, "", timeout_s=60),
    # -- maintenance -------------------------------------------------------------------------
    _row("rescue", "staleness 0", STALENESS, staleness_s=0),
    _row("rescue", "staleness NaN", STALENESS, staleness_s=float("nan")),
    _row("rescue", "staleness of 5,000 digits", STALENESS, staleness_s=HUGE),
    _row("rescue", "limit 0", LIMIT, limit=0),
    _row("promote", "limit -1", LIMIT, limit=-1),
    _row("plan_fires", "limit 0", LIMIT, limit=0),
    _row("plan_fires", "limit too big", LIMIT, limit=TOO_MANY),
    _row("fire", "a schedule not a plan", "FirePlan", NIGHTLY),
    _row("fire", "nothing", "FirePlan", None),
    _row("delete_finished", "negative age", OLDER, older_than_s=-1),
    _row("delete_finished", "limit 0", LIMIT, older_than_s=1, limit=0),
    _row("delete_finished", "failed age NaN", OLDER, older_than_s=1, failed_older_than_s=NAN),
    _row("delete_finished", "failed age a string", OLDER, older_than_s=1, failed_older_than_s="7d"),
    _row("expire_dlq", "age NaN", OLDER, older_than_s=float("nan")),
    _row("expire_dlq", "age a string", OLDER, older_than_s="30d"),
    _row("try_lead", "empty owner", LEADER, "", ttl_s=30),
    _row("try_lead", "owner not a string", LEADER, 42, ttl_s=30),
    _row("try_lead", "NUL in owner", NUL, "w\x00", ttl_s=30),
    _row("try_lead", "owner too long", "at most", "w" * 201, ttl_s=30),
    _row("try_lead", "ttl 0", TTL, "w", ttl_s=0),
    _row("try_lead", "ttl of 1e12 s", TTL, "w", ttl_s=1e12),
    _row("release_lead", "empty owner", LEADER, ""),
    _row("release_lead", "owner None", LEADER, None),
    # -- worker presence ---------------------------------------------------------------------
    _row("record_worker", "empty owner", LEADER, "", {"q": ["k"]}, ttl_s=15, capability=TW),
    _row("record_worker", "kinds a list", "mapping", "w", ["k"], ttl_s=15, capability=TW),
    _row("record_worker", "kinds a string", LIST, "w", {"q": "k"}, ttl_s=15, capability=TW),
    _row("record_worker", "bad queue", QUEUE, "w", {"NO": ["k"]}, ttl_s=15, capability=TW),
    _row("record_worker", "bad kind", KIND, "w", {"q": ["1 k"]}, ttl_s=15, capability=TW),
    _row("record_worker", "ttl 0", TTL, "w", {"q": ["k"]}, ttl_s=0, capability=TW),
    _row("record_worker", "kinds a set", LIST, "w", {"q": {"k"}}, ttl_s=15, capability=TW),
    _row(
        "record_worker",
        "too many queues",
        "at most 1000 queues",
        "w",
        {f"q{n}": ["k"] for n in range(1001)},
        ttl_s=15,
        capability=TW,
    ),
    _row(
        "record_worker",
        "too many kinds",
        "at most 10000 kinds",
        "w",
        {"q": [f"k{n}" for n in range(10_001)]},
        ttl_s=15,
        capability=TW,
    ),
    _row("forget_worker", "owner None", LEADER, None, capability=TW),
    # -- subscribe ---------------------------------------------------------------------------
    _row("subscribe", "listener not callable", "callable", None, capability=Listens),
    # -- the queue summary -------------------------------------------------------------------
    _row("summarize_queues", "window 0", WINDOW, window_s=0, capability=SummarizesQueues),
    _row(
        "summarize_queues", "window NaN", WINDOW, window_s=float("nan"), capability=SummarizesQueues
    ),
    _row("summarize_queues", "window a string", WINDOW, window_s="5m", capability=SummarizesQueues),
    # -- operators ---------------------------------------------------------------------------
    _row("get_job", "job id with SQL", JOB_ID, "1; DROP TABLE awa.jobs"),
    _row("get_job", "job id a bool", JOB_ID, True),
    _row("cancel", "job id a float", JOB_ID, 1.5),
    _row("cancel", "job id past 64 bits", "64-bit", 2**63),
    _row("get_job", "job id of 5,000 digits", "digits", HUGE),
    _row("retry", "job id below 64 bits", "64-bit", -(2**63) - 1),
    _row("retry", "naive run_at", "timezone-aware", FAILED, run_at=datetime(2030, 1, 1)),
    _row("retry", "run_at past 9999", "9999-01-01 UTC", FAILED, run_at=_PAST_9999),
    _row("retry_from_dlq", "run_at a string", "timezone-aware", 1, run_at="tomorrow"),
    _row("bulk_retry_from_dlq", "run_at of year 1", "1970-01-01", all=True, run_at=_YEAR_1),
    _row("retry_failed", "run_at of year 1", "1970-01-01", all=True, run_at=_YEAR_1),
    _row("retry", "job id a string", JOB_ID, "1"),
    _row("list_jobs", "unknown state", "unknown job state", state="bogus"),
    _row("list_jobs", "kind with a space", KIND, kind="1bad kind"),
    _row("list_jobs", "queue with spaces", QUEUE, queue="NOT VALID"),
    _row("list_jobs", "limit 0", LIMIT, limit=0),
    _row("list_jobs", "before_id a string", JOB_ID, before_id="10"),
    _row("list_jobs", "before_id a bool", JOB_ID, before_id=True),
    _row("list_jobs", "before_id past 64 bits", "64-bit", before_id=2**64),
    _row("list_jobs", "limit of 5,000 digits", LIMIT, limit=HUGE),
    _row("list_job_summaries", "unknown home", "home must be one of jobs, dlq", home="dead"),
    _row("list_job_summaries", "home not text", "home must be one of jobs, dlq", home=None),
    _row("list_job_summaries", "unknown state", "unknown job state", state="bogus", home="dlq"),
    _row("list_job_summaries", "queue with spaces", QUEUE, queue="NOT VALID"),
    _row("list_job_summaries", "limit over a batch", LIMIT, limit=BATCH_SIZE_MAX + 1),
    _row("list_job_summaries", "before_id a string", JOB_ID, before_id="10", home="dlq"),
    _row("list_job_summaries", "NUL in tag", NUL, tag="a\x00b"),
    _row("count_jobs", "unknown state", "unknown job state", state="bogus"),
    _row("count_jobs", "kind with a space", KIND, kind="1bad kind"),
    _row("count_jobs", "queue with spaces", QUEUE, queue="NOT VALID"),
    _row("list_jobs", "empty tag", TAG, tag=""),
    _row("list_jobs", "tag a list", TAG, tag=["a"]),
    _row("list_jobs", "NUL in tag", NUL, tag="a\x00b"),
    _row("pause_queue", "empty queue", QUEUE, ""),
    _row("pause_queue", "upper-case queue", QUEUE, "UPPER"),
    _row("resume_queue", "empty queue", QUEUE, ""),
    _row("set_dlq_enabled", "empty queue", QUEUE, "", True),
    _row("set_dlq_enabled", "enabled a string", FLAG, "default", "yes"),
    _row("configure_queue", "nothing to set", "nothing to configure", "default"),
    _row("configure_queue", "queue with spaces", QUEUE, "a queue", dlq_enabled=True),
    _row("configure_queue", "dlq_enabled a string", FLAG, "default", dlq_enabled="on"),
    _row("configure_queue", "finished retention 0", RETENTION, "default", finished_retention_s=0),
    _row("configure_queue", "failed retention 0", RETENTION, "default", failed_retention_s=0),
    _row("configure_queue", "failed retention -1", RETENTION, "dead", failed_retention_s=-1),
    _row("configure_queue", "dlq retention NaN", RETENTION, "dead", dlq_retention_s=float("nan")),
    _row("configure_queue", "retention of 5,000 digits", RETENTION, "dead", dlq_retention_s=HUGE),
    _row(
        "configure_queue",
        "good setting beside a bad one",
        RETENTION,
        "dead",
        dlq_enabled=False,
        dlq_retention_s=-1,
    ),
    _row("configure_queue", "concurrency limit 0", CONC, "default", concurrency_limit=0),
    _row("configure_queue", "concurrency limit -1", CONC, "default", concurrency_limit=-1),
    _row("configure_queue", "concurrency limit 1.5", CONC, "default", concurrency_limit=1.5),
    _row("configure_queue", "concurrency limit True", CONC, "default", concurrency_limit=True),
    _row("configure_queue", "concurrency limit a string", CONC, "default", concurrency_limit="3"),
    _row(
        "configure_queue", "concurrency limit of 5,000 digits", CONC, "dead", concurrency_limit=HUGE
    ),
    _row("configure_queue", "rate not a pair", RATE, "default", rate_limit=5),
    _row("configure_queue", "rate of three", RATE, "default", rate_limit=(1, 2, 3)),
    _row("configure_queue", "rate burst 0", BURST, "default", rate_limit=(1, 0)),
    _row("configure_queue", "rate burst 2.5", BURST, "default", rate_limit=(1, 2.5)),
    _row("configure_queue", "rate per second 0", PER_SECOND, "default", rate_limit=(0, 1)),
    _row("configure_queue", "rate per second -1", PER_SECOND, "default", rate_limit=(-1, 1)),
    _row("configure_queue", "rate per second NaN", PER_SECOND, "default", rate_limit=(NAN, 1)),
    _row("configure_queue", "rate per second inf", PER_SECOND, "dead", rate_limit=(INF, 1)),
    _row(
        "configure_queue",
        "good limit beside a bad rate",
        BURST,
        "dead",
        concurrency_limit=2,
        rate_limit=(1, 0),
    ),
    _row("retry_failed", "no filter", NO_FILTER),
    _row("retry_failed", "all a string", FLAG, all="yes"),
    _row("retry_failed", "queue with spaces", QUEUE, queue="a queue"),
    _row("discard_failed", "no filter", NO_FILTER),
    _row("discard_failed", "empty kind", KIND, kind=""),
    _row("drain_queue", "empty queue", QUEUE, ""),
    _row("drain_queue", "queue None", QUEUE, None),
    # -- periodic schedules ------------------------------------------------------------------
    _row("register_schedules", "one schedule not in a list", LIST, NIGHTLY),
    _row("register_schedules", "not schedules", "expected Schedule", [{"name": "x"}]),
    _row("register_schedules", "a name twice", "given twice", [NIGHTLY, NIGHTLY]),
    _row("set_schedule_paused", "empty name", SCHEDULE, "", True),
    _row("set_schedule_paused", "paused a string", FLAG, "nightly", "yes"),
    _row("trigger_schedule", "name with spaces", SCHEDULE, "night ly"),
    _row("trigger_schedule", "name None", SCHEDULE, None),
    _row("remove_schedule", "name with SQL", SCHEDULE, "x'; --"),
    # -- the dead-letter queue ---------------------------------------------------------------
    _row("move_to_dlq", "job id a string", JOB_ID, "1", reason="x"),
    _row("move_to_dlq", "blank reason", REASON, FAILED, reason="  "),
    _row("move_to_dlq", "NUL in reason", NUL, FAILED, reason="a\x00b"),
    _row("move_to_dlq", "reason too long", "at most", FAILED, reason="x" * 10_001),
    _row("list_dlq", "queue with spaces", QUEUE, queue="no spaces allowed"),
    _row("list_dlq", "limit 0", LIMIT, limit=0),
    _row("list_dlq", "before_id a float", JOB_ID, before_id=1.5),
    _row("get_dlq_entry", "job id a string", JOB_ID, "1"),
    _row("retry_from_dlq", "job id None", JOB_ID, None),
    _row("bulk_retry_from_dlq", "no filter", NO_FILTER),
    _row("bulk_retry_from_dlq", "all a number", FLAG, all=1),
    _row("bulk_retry_from_dlq", "empty queue", QUEUE, queue=""),
    _row("purge_dlq", "no filter", NO_FILTER),
    _row("purge_dlq", "all a string", FLAG, all="no"),
    _row("purge_dlq", "empty kind", KIND, kind=""),
    _row("purge_dlq_job", "job id a string", JOB_ID, "1"),
)

_LEADER = "contract-leader"
_PROBE = "contract-probe"


def _populate(store: ClaimStore, clock: ManualClock) -> dict[Given, object]:
    """A store with a little of everything a refused call could wrongly touch."""
    store.set_dlq_enabled("dead", True)
    store.insert(
        [
            NewJob(kind="waiting"),
            NewJob(kind="due", run_at=clock.now() + timedelta(seconds=1)),
            NewJob(kind="running", queue="busy"),
            NewJob(kind="parked", queue="busy"),
            NewJob(kind="failed", queue="failed"),
            NewJob(kind="done", queue="done"),
            NewJob(kind="dead", queue="dead"),
            NewJob(kind="held", queue="paused"),
        ]
    )
    running, parked = store.claim("busy", limit=2)
    callback_id = _park(store, parked)
    failed = _claim_one(store, "failed")
    _finish(store, failed.lease, Fail("x", terminal=True))
    _finish(store, _claim_one(store, "done").lease, Complete())
    _finish(store, _claim_one(store, "dead").lease, Fail("x", terminal=True))
    store.pause_queue("paused")
    store.register_schedules([NIGHTLY])
    assert store.try_lead(_LEADER, ttl_s=3600)
    if isinstance(store, TracksWorkers):
        store.record_worker(_LEADER, {"default": ["waiting"]}, ttl_s=3600)
    if isinstance(store, SummarizesQueues):
        store.summarize_queues()
    clock.advance(5)  # now a write that slips through changes a timestamp, and "due" is due
    return {
        Given.LIVE_LEASE: running.lease,
        Given.PENDING_CALLBACK: callback_id,
        Given.FAILED_JOB: failed.id,
    }


def _snapshot(store: ClaimStore) -> tuple[object, ...]:
    """Everything a caller can see, through the port's own verbs. The leader is probed with a
    bid that loses (and so changes nothing) while the populated leader still leads."""
    return (
        store.list_jobs(limit=BATCH_SIZE_MAX),
        store.list_dlq(limit=BATCH_SIZE_MAX),
        sorted(store.queue_stats(), key=lambda stats: stats.queue),
        store.list_schedules(),
        store.try_lead(_PROBE, ttl_s=3600),
        store.unhandled_kinds() if isinstance(store, TracksWorkers) else None,
        store.queue_summary() if isinstance(store, SummarizesQueues) else None,
    )


class RefusalContract(StoreFixtures):
    """Every row of ``REFUSALS``: the error, in one line, and nothing changed."""

    @pytest.mark.parametrize("refusal", REFUSALS, ids=[r.id for r in REFUSALS])
    def test_refused_call_raises_one_line_and_changes_nothing(
        self, store: ClaimStore, clock: ManualClock, refusal: Refusal
    ) -> None:
        if refusal.capability is not None and not isinstance(store, refusal.capability):
            pytest.skip(f"{type(store).__name__} is not {refusal.capability.__name__}")
        given = _populate(store, clock)
        before = _snapshot(store)
        args, kwargs = refusal.arguments(given)
        with pytest.raises(refusal.error) as raised:
            getattr(store, refusal.verb)(*args, **kwargs)
        message = str(raised.value)
        assert refusal.fragment in message, f"{message!r} should say {refusal.fragment!r}"
        assert "\n" not in message, f"a refusal is one line: {message!r}"
        assert _snapshot(store) == before, "a refused call must change nothing"
