"""docs/lifecycle.md is generated from the table and must not go stale."""

import pathlib

from awa.domain import TRANSITIONS
from awa.domain.diagram import REGENERATE_COMMAND, render_lifecycle_markdown

DOC = pathlib.Path(__file__).parents[2] / "docs" / "lifecycle.md"


def test_lifecycle_doc_matches_the_transition_table() -> None:
    assert DOC.read_text() == render_lifecycle_markdown(), (
        f"docs/lifecycle.md is stale; regenerate it with: {REGENERATE_COMMAND}"
    )


def test_lifecycle_doc_lists_every_transition() -> None:
    text = render_lifecycle_markdown()
    for (state, trigger), target in TRANSITIONS.items():
        assert f"| `{state.value}` | `{trigger.value}` | `{target.value}` |" in text
