"""Run mutants: a fork server that imports the heavy libraries once, then forks one child per
mutant. The child loads the mutated module in place of the real one (an import hook: no file is
changed, so tests running elsewhere in the work tree are not disturbed) or swaps one SQL
statement, and runs the tests that reach the mutant, fastest first, stopping at the first
failure. A child that outlives its time is killed and counts as detected.

Tests are chosen per mutant from a baseline run: coverage contexts (which test ran which line)
for Python, and which statements each test executed for SQL.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

import pytest

from mutation.python_ops import Mutant

__all__ = ["Baseline", "Outcome", "baseline", "preload", "run_mutants"]

ROOT = Path(__file__).resolve().parents[2]
_PRELOAD = (
    "pytest",
    "_pytest.python",
    "_pytest.fixtures",
    "hypothesis",
    "hypothesis.stateful",
    "hypothesis.strategies",
    "attrs",
    "cattrs",
    "rich",
    "rich.console",
    "psycopg",
    "psycopg_pool",
    "anyio",
    "coverage",
)


def preload() -> None:
    """Import what every child needs but nothing of awa, and register the Hypothesis profile
    the children run under: derandomized, so every run of the tool agrees, and no example
    database (a mutant's failures must not be replayed against the real code)."""
    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "mutate",
        max_examples=200,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    os.environ["HYPOTHESIS_PROFILE"] = "mutate"


@dataclass
class Baseline:
    """What the unmutated code's tests did: each test's time, and what each test reached
    (``{file: {line: [test ids]}}`` for Python, ``{statement: [test ids]}`` for SQL)."""

    durations: dict[str, float]
    lines: dict[str, dict[int, list[str]]]
    statements: dict[str, list[str]]
    failed: list[str]


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, timeout, survived, uncovered
    tests: int
    seconds: float


# -- the children ---------------------------------------------------------------------------


class _MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the mutated code for one module name; everything else imports as usual."""

    def __init__(self, name: str, path: Path, code: CodeType) -> None:
        self.name, self.path, self.code = name, path, code

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(self.code, module.__dict__)


def _module_name(path: str) -> str:
    return path.removeprefix("src/").removesuffix(".py").replace("/", ".")


class _Select:
    """Runs only the chosen tests, in the given order; writes the first that fails to
    ``killer``."""

    def __init__(self, order: Sequence[str], killer: Path) -> None:
        self.rank = {nodeid: n for n, nodeid in enumerate(order)}
        self.killer = killer

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and not self.killer.exists():
            self.killer.write_text(report.nodeid)

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        chosen = sorted(
            (i for i in items if i.nodeid in self.rank), key=lambda i: self.rank[i.nodeid]
        )
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in self.rank])
        items[:] = chosen


class _Record:
    """Baseline bookkeeping: each test's duration and pass/fail; ``context`` is told which
    test is running."""

    def __init__(self, context: Callable[[str], None]) -> None:
        self.context = context
        self.durations: dict[str, float] = {}
        self.failed: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> None:
        self.context(item.nodeid)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.failed:
            self.failed.append(report.nodeid)


def _quiet() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


def _pytest(args: list[str], plugins: list[object]) -> int:
    os.chdir(ROOT)
    return int(pytest.main(["-q", "-p", "no:cacheprovider", *args], plugins=plugins))


def _fork(child: Callable[[], int]) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            os.setpgid(0, 0)
            code = child()
        finally:
            os._exit(code)
    with contextlib.suppress(OSError):  # the child may have done so itself already
        os.setpgid(pid, pid)  # its own group: a timeout ends it and all it started
    return pid


def _statement_recorder() -> tuple[dict[str, set[str]], Callable[[str], None]]:
    """Wrap psycopg's cursors so each executed statement of the adapter is noted against the
    running test."""
    import psycopg

    from awa.adapters.postgres._sql import SQL

    names = {text: name for name, text in SQL.items()}
    seen: dict[str, set[str]] = {}
    current = [""]

    def wrap(cls: type, method: str) -> None:
        original = getattr(cls, method)

        def recording(self: object, query: object, *args: object, **kwargs: object) -> object:
            name = names.get(query) if isinstance(query, str) else None
            if name is not None:
                seen.setdefault(name, set()).add(current[0])
            return original(self, query, *args, **kwargs)

        setattr(cls, method, recording)

    for cls in (psycopg.Cursor, psycopg.AsyncCursor):
        wrap(cls, "execute")
        wrap(cls, "executemany")

    def switch(nodeid: str) -> None:
        current[0] = nodeid

    return seen, switch


def baseline(kind: str, pool: list[str], targets: list[str], report: Path) -> Baseline:
    """Run the pool once on the real code, in a child, recording what each test reached."""

    def child() -> int:
        _quiet()
        if kind == "python":
            import coverage

            cov = coverage.Coverage(data_file=None, include=[str(ROOT / t) for t in targets])
            cov.start()
            recorder = _Record(cov.switch_context)
            code = _pytest(["-p", "no:randomly", *pool], [recorder])
            cov.stop()
            data = cov.get_data()
            lines = {
                t: {
                    n: [c for c in cs if c]
                    for n, cs in data.contexts_by_lineno(str(ROOT / t)).items()
                }
                for t in targets
            }
            statements: dict[str, list[str]] = {}
        else:
            seen, switch = _statement_recorder()
            recorder = _Record(switch)
            code = _pytest(["-p", "no:randomly", *pool], [recorder])
            lines = {}
            statements = {name: sorted(ids - {""}) for name, ids in seen.items()}
        report.write_text(
            json.dumps(
                {
                    "durations": recorder.durations,
                    "lines": lines,
                    "statements": statements,
                    "failed": recorder.failed,
                }
            )
        )
        return code

    pid = _fork(child)
    _, status = os.waitpid(pid, 0)
    if not report.exists():
        raise SystemExit(f"the {kind} baseline run crashed (status {status})")
    data = json.loads(report.read_text())
    if data["failed"]:
        print(
            f"baseline: {len(data['failed'])} tests fail on the real code and are left out:",
            *data["failed"][:10],
            sep="\n  ",
            file=sys.stderr,
        )
    return Baseline(
        durations=data["durations"],
        lines={f: {int(n): ids for n, ids in ls.items()} for f, ls in data["lines"].items()},
        statements=data["statements"],
        failed=data["failed"],
    )


def _selected(mutant: Mutant, base: Baseline, killers: Counter[str]) -> list[str]:
    """The baseline tests that reach the mutant: those that killed the most mutants so far
    first, then the fastest. A mutant of code that runs at import (a table, a constant, a
    class body) may change what any test sees, and coverage cannot tell who reads a table:
    every test runs for it."""
    chosen: set[str] = set()
    if mutant.sql is not None:
        chosen.update(base.statements.get(mutant.sql[0], []))
    else:
        by_line = base.lines.get(mutant.path, {})
        for line in mutant.lines:
            chosen.update(by_line.get(line, []))
    if mutant.scope is not None and not chosen:
        chosen = set(base.durations)
    chosen -= set(base.failed)
    return sorted(chosen, key=lambda t: (-killers[t], base.durations.get(t, 0.0), t))


def _mutant_child(mutant: Mutant, tests: list[str], killer: Path) -> Callable[[], int]:
    def child() -> int:
        _quiet()
        if mutant.code is not None:
            path = ROOT / mutant.path
            sys.meta_path.insert(0, _MutantFinder(_module_name(mutant.path), path, mutant.code))
        if mutant.sql is not None:
            from awa.adapters.postgres._sql import SQL, expand_job_columns

            name, text = mutant.sql
            SQL[name] = expand_job_columns(text)
        files = sorted({t.split("::")[0] for t in tests})
        return _pytest(["-x", "-p", "no:randomly", *files], [_Select(tests, killer)])

    return child


def run_mutants(
    mutants: list[Mutant], base: Baseline, work: Path, *, jobs: int, slack_s: float
) -> Iterator[Outcome]:
    """Each mutant's outcome, as the children finish (up to ``jobs`` at once)."""
    queue = list(mutants)
    running: dict[int, tuple[Mutant, int, float, float, Path]] = {}
    killers: Counter[str] = Counter()
    while queue or running:
        while queue and len(running) < jobs:
            mutant = queue.pop(0)
            tests = _selected(mutant, base, killers)
            if not tests:
                yield Outcome(mutant, "uncovered", 0, 0.0)
                continue
            budget = slack_s + 3 * sum(base.durations.get(t, 0.0) for t in tests)
            killer = work / f"killer-{len(queue)}"
            pid = _fork(_mutant_child(mutant, tests, killer))
            running[pid] = (mutant, len(tests), time.monotonic(), budget, killer)
        time.sleep(0.02)
        for pid, (mutant, count, started, budget, killer) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            elapsed = time.monotonic() - started
            if done == 0 and elapsed < budget:
                continue
            if done == 0:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                verdict = "timeout"
            else:
                code = os.waitstatus_to_exitcode(status)
                verdict = "survived" if code == 0 else "killed"
                if killer.exists():
                    killers[killer.read_text()] += 1
                    killer.unlink()
            del running[pid]
            yield Outcome(mutant, verdict, count, elapsed)


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="awa-mutate-"))
