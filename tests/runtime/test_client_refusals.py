"""Inputs that used to be silently changed, or refused with the wrong error, through the
client on both stores: each is one ``ValidationError`` line, and nothing changes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import awa
from awa.domain import Fail, Lease
from awa.ports import Finish

from .conftest import Backend, run

S = awa.JobState


def _nested(depth: int) -> object:
    node: object = 0
    for _ in range(depth):
        node = {"n": node}
    return node


INSERT_REFUSALS: list[tuple[dict[str, Any], str]] = [
    ({"tags": "abc"}, "tags must be a list of strings, got 'abc'"),
    ({"queue": ""}, "invalid queue name ''"),
    ({"metadata": [1]}, "metadata must be a JSON object, got list"),
    ({"priority": 9}, "priority must be an integer from 1 to 4, got 9"),
]


@pytest.mark.parametrize(
    ("options", "message"), INSERT_REFUSALS, ids=[m for _, m in INSERT_REFUSALS]
)
def test_an_insert_option_is_refused_not_changed(
    backend: Backend, options: dict[str, Any], message: str
) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        with pytest.raises(awa.ValidationError) as caught:
            await client.insert({"x": 1}, kind="k", **options)
        assert message in str(caught.value)
        assert "\n" not in str(caught.value)
        assert await client.list_jobs() == []

    run(story)


def test_args_larger_than_the_limit_are_refused(backend: Backend) -> None:
    async def story() -> None:
        _, store, [client] = backend.clients()
        big = {"blob": "x" * (1024 * 1024)}
        with pytest.raises(awa.ValidationError, match=r"the limit is 1,048,576 \(max_args_bytes\)"):
            await client.insert(big, kind="k")
        assert await client.list_jobs() == []
        small_limit = awa.AsyncClient(store=store, max_args_bytes=100)
        with pytest.raises(awa.ValidationError, match="the limit is 100"):
            await small_limit.insert_many(
                [
                    awa.InsertSpec(args={"ok": 1}, kind="k"),
                    awa.InsertSpec(args={"b": "x" * 200}, kind="k"),
                ]
            )
        assert await client.list_jobs() == []  # one bad item: the batch writes nothing

    run(story)


async def _parked(client: awa.AsyncClient, store: Any) -> tuple[awa.JobRecord, str]:
    await client.insert({"x": 1}, kind="k")
    [claimed] = store.claim("default", limit=1)
    registered = store.register_callback(Lease(claimed.id, claimed.run_lease), timeout_s=60)
    assert registered.job.callback_id is not None
    return registered.job, registered.job.callback_id


CALLBACK_REFUSALS: list[tuple[str, Callable[[awa.AsyncClient, str], Awaitable[object]], str]] = [
    ("empty error", lambda c, cid: c.fail_external(cid, ""), "callback error must be a non-empty"),
    ("nul in error", lambda c, cid: c.fail_external(cid, "a\x00"), "contains a NUL character"),
    (
        "nul in payload",
        lambda c, cid: c.complete_external(cid, {"a": "\x00"}),
        "callback payload.a contains a NUL character",
    ),
    (
        "payload nested 5,000 deep",
        lambda c, cid: c.resume_external(cid, _nested(5000)),
        "nested deeper than 64 levels",
    ),
    (
        "timeout beyond any date",
        lambda c, cid: c.heartbeat_callback(cid, timeout=1e12),
        "callback timeout must be > 0 and at most",
    ),
]


@pytest.mark.parametrize(
    ("case", "answer", "message"), CALLBACK_REFUSALS, ids=[c for c, _, _ in CALLBACK_REFUSALS]
)
def test_a_bad_callback_answer_is_refused_and_changes_nothing(
    backend: Backend,
    case: str,
    answer: Callable[[awa.AsyncClient, str], Awaitable[object]],
    message: str,
) -> None:
    async def story() -> None:
        _, store, [client] = backend.clients()
        job, callback_id = await _parked(client, store)
        with pytest.raises(awa.ValidationError) as caught:
            await answer(client, callback_id)
        assert message in str(caught.value)
        assert "\n" not in str(caught.value)
        assert await client.get_job(job.id) == job
        await client.complete_external(callback_id, {"ok": True})  # still pending

    run(story)


def test_a_bulk_purge_needs_a_real_true(backend: Backend) -> None:
    async def story() -> None:
        _, store, [client] = backend.clients()
        store.set_dlq_enabled("default", True)
        await client.insert({"x": 1}, kind="k", max_attempts=1)
        [claimed] = store.claim("default", limit=1)
        store.finish([Finish(claimed.lease, Fail("boom"))])
        with pytest.raises(awa.ValidationError, match="all must be True or False, got 'no'"):
            await client.purge_dlq(all="no")  # type: ignore[arg-type]
        assert len(await client.list_dlq()) == 1

    run(story)


def test_an_unknown_state_filter_is_a_validation_error(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        with pytest.raises(awa.ValidationError, match="unknown job state 'bogus'"):
            await client.list_jobs(state="bogus")

    run(story)
