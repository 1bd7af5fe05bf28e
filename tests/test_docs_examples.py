"""Every Python example in docs/ runs as written. Examples on PostgreSQL use the placeholder
URL below, which the test swaps for the URL of a migrated, emptied test database. An example
that configures Django runs in an interpreter of its own: Django's settings are configured
once per process."""

import asyncio
import pathlib
import re
import subprocess
import sys

import pytest
from psycopg.conninfo import conninfo_to_dict

import awa

DOCS = pathlib.Path(__file__).parents[1] / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
PLACEHOLDER_URL = "postgresql://app@db/app"


def _examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for number, code in enumerate(BLOCK.findall(page.read_text()), start=1):
            found.append((f"{page.name}#{number}", code))
    return found


EXAMPLES = _examples()


def _as_url(conninfo: str) -> str:
    """The test database as a URL, as the examples spell theirs."""
    params = conninfo_to_dict(conninfo)
    return f"postgresql://{params['user']}@{params['host']}:{params['port']}/{params['dbname']}"


@pytest.mark.parametrize(("where", "code"), EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_docs_example_runs(where: str, code: str, request: pytest.FixtureRequest) -> None:
    if PLACEHOLDER_URL in code:
        code = code.replace(PLACEHOLDER_URL, _as_url(request.getfixturevalue("pg_clean_url")))
    if "settings.configure(" in code:
        ran = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert ran.returncode == 0, f"{where} failed:\n{ran.stdout}{ran.stderr}"
        return
    namespace = {"__name__": "docs_example"}
    try:
        exec(compile(code, where, "exec"), namespace)
    finally:
        _close_clients(namespace)


def _close_clients(namespace: dict[str, object]) -> None:
    """Close what an example left open, as its process's exit would (a module-level client
    in ``myapp/jobs.py``): a pool collected later, from one of its own threads, warns."""
    for value in namespace.values():
        if isinstance(value, awa.Client):
            value.close()
        elif isinstance(value, awa.AsyncClient):
            asyncio.run(value.close())


def test_every_docs_page_with_python_has_a_runnable_example() -> None:
    pages = {where.split("#")[0] for where, _ in EXAMPLES}
    assert {
        "domain.md",
        "testing.md",
        "workers.md",
        "postgres.md",
        "simulation.md",
        "integrations.md",
    } <= pages
