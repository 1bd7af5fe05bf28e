"""The ``awa_client`` and ``awa_clock`` fixtures (loaded through the pytest11 entry point, as
in any project that installs awa), in a test suite of a user's own."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = """
import asyncio
from dataclasses import dataclass

import awa


@dataclass
class Resize:
    width: int


def test_a_retried_handler_completes_once_time_moves(awa_client, awa_clock):
    @awa_client.task(Resize)
    async def resize(job: awa.Job[Resize]) -> object:
        return awa.RetryAfter(30) if job.attempt == 1 else None

    async def story():
        job = await awa_client.insert(Resize(640))
        assert job.id == 1  # every test starts from an empty store
        assert (await awa_client.work_one()).state is awa.JobState.RETRYABLE
        awa_clock.advance(30)
        assert (await awa_client.work_one()).state is awa.JobState.COMPLETED

    asyncio.run(story())


def test_the_next_test_starts_empty_too(awa_client):
    @awa_client.task(Resize)
    def resize(job):
        pass

    async def story():
        assert (await awa_client.insert(Resize(1))).id == 1
        assert len(await awa_client.work_all()) == 1

    asyncio.run(story())
"""


def test_the_fixtures_run_a_users_tests_on_the_memory_store(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    pytester.runpytest_subprocess().assert_outcomes(passed=2)


@pytest.mark.postgres
def test_the_fixtures_run_the_same_tests_on_postgresql_given_a_url(
    pytester: pytest.Pytester, pg_clean_url: str
) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("--awa-url", pg_clean_url)
    result.assert_outcomes(passed=2)


def test_the_fixture_example_in_the_testing_docs_passes(pytester: pytest.Pytester) -> None:
    page = (Path(__file__).parents[2] / "docs" / "testing.md").read_text()
    section = page.split("### pytest fixtures", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    pytester.makepyfile(test_from_docs=example)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
