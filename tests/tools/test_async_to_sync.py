"""The sync client's shared verbs are generated from the async client's (one source): the
checked-in file must be what ``tools/async_to_sync.py`` makes, and the tool's rules hold."""

from __future__ import annotations

import pathlib
import sys

import pytest

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))

import async_to_sync  # noqa: E402


def test_the_checked_in_sync_verbs_are_what_the_async_verbs_make() -> None:
    made = async_to_sync.generate(async_to_sync.SOURCE.read_text())
    assert async_to_sync.TARGET.read_text() == made, (
        "src/awa/client/sync_verbs.py is stale: run python tools/async_to_sync.py"
    )


def test_the_check_fails_on_a_stale_file_and_passes_on_a_current_one(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "sync_verbs.py"
    copy.write_text(async_to_sync.TARGET.read_text())
    monkeypatch.setattr(async_to_sync, "TARGET", copy)
    assert async_to_sync.main(["--check"]) == 0
    copy.write_text(copy.read_text() + "\n# edited by hand\n")
    assert async_to_sync.main(["--check"]) == 1


SOURCE = '''"""Async verbs."""

from awa.client.calls import AsyncCalls


class AsyncVerbs(AsyncCalls):
    async def get(self, job_id: int) -> int:
        """Docstring kept."""
        return await self._call(self.store.get, job_id, limit=1)

    async def wait(self) -> None:
        await self.sleep()

    def plain(self) -> str:
        return "AsyncVerbs"
'''


def test_the_rules_turn_awaited_store_calls_into_direct_calls() -> None:
    made = async_to_sync.generate(SOURCE)
    assert "class Verbs:" in made  # renamed, the async base dropped
    assert "awa.client.calls" not in made
    assert "AsyncCalls" not in made
    assert "def get(self, job_id: int) -> int:" in made
    assert "async def" not in made
    assert "return self.store.get(job_id, limit=1)" in made
    assert "self.sleep()" in made
    assert "await" not in made
    assert '"""Docstring kept."""' in made
    assert made.startswith('"""The verbs both clients share, as the sync client\'s: generated')


FORWARDING = '''"""Async verbs."""

from awa.client.calls import AsyncCalls, forward_async
from awa.ports import OperatorStore


class AsyncVerbs(AsyncCalls):
    cancel = forward_async(OperatorStore.cancel)
    retry = forward_async(
        OperatorStore.retry,
        doc="""Retry a job:
        now, or at ``run_at``.""",
    )
'''


def test_a_forwarded_verb_is_forwarded_on_the_callers_thread_with_the_async_verbs_text() -> None:
    made = async_to_sync.generate(FORWARDING)
    assert "from awa.client.calls import forward\n" in made  # AsyncCalls dropped, renamed
    assert "from awa.client.async_verbs import AsyncVerbs\n" in made
    assert "cancel = forward(OperatorStore.cancel)\n" in made
    assert "retry = forward(OperatorStore.retry, doc=AsyncVerbs.retry.__doc__)\n" in made
    assert "forward_async" not in made
    assert "Retry a job" not in made  # written once, in the source
