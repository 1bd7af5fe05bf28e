"""Every Python example in docs/ runs as written."""

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).parents[1] / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for number, code in enumerate(BLOCK.findall(page.read_text()), start=1):
            found.append((f"{page.name}#{number}", code))
    return found


@pytest.mark.parametrize(("where", "code"), _examples(), ids=[w for w, _ in _examples()])
def test_docs_example_runs(where: str, code: str) -> None:
    if "from awa.adapters.postgres" in code or "postgresql://" in code:
        pytest.skip("needs a database URL; exercised by tests/postgres")
    exec(compile(code, where, "exec"), {"__name__": "docs_example"})
