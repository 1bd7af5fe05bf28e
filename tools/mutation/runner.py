"""Run mutants: fork servers, one child per mutant, and no file is ever changed (tests running
elsewhere in the work tree are not disturbed).

- In place: a server collects the test pool once (awa imported, tests collected), then each
  child swaps the mutant in - a function's new code (``__code__``), or one SQL statement - and
  runs the tests that reach it. Most mutants go this way: a child costs a fork.
- Fresh: for code that runs at import (a table, a constant, a class body, a default, or a
  function called while importing), a server that has imported the libraries but nothing of
  awa forks a child that loads the mutated module through an import hook, collects and runs.

Either way the child runs the chosen tests, earlier killers first, stopping at the first
failure; one that outlives its time is killed and counts as detected.

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
from _pytest.runner import runtestprotocol

from mutation.python_ops import Mutant

__all__ = ["Baseline", "Outcome", "baseline", "preload", "run_mutants"]

ROOT = Path(__file__).resolve().parents[2]
_SQL_FOLDER = ROOT / "src/awa/adapters/postgres/sql"
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
        max_examples=100,  # half the dev profile's: a mutant's tests run hundreds of times
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
    import_lines: dict[str, list[int]]  # lines run while importing and collecting


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
            if name is None and isinstance(query, str) and query.lstrip().startswith("EXPLAIN"):
                # a plan test: EXPLAIN (...) and the statement's text
                name = next((n for text, n in names.items() if query.endswith(text)), None)
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
        at_import: dict[str, list[int]] = {}
        if kind == "python":
            import coverage

            cov = coverage.Coverage(data_file=None, include=[str(ROOT / t) for t in targets])
            cov.start()
            recorder = _Record(cov.switch_context)
            code = _pytest(["-p", "no:randomly", *pool], [recorder])
            cov.stop()
            data = cov.get_data()
            contexts = {t: data.contexts_by_lineno(str(ROOT / t)) for t in targets}
            lines = {
                t: {n: [c for c in cs if c] for n, cs in by.items()} for t, by in contexts.items()
            }
            at_import = {
                t: sorted(n for n, cs in by.items() if "" in cs) for t, by in contexts.items()
            }
            statements: dict[str, list[str]] = {}
        else:
            seen, switch = _statement_recorder()
            recorder = _Record(switch)
            code = _pytest(["-p", "no:randomly", *pool], [recorder])
            lines = {}
            statements = {name: sorted(ids - {""}) for name, ids in seen.items()}
        found = {
            "durations": recorder.durations,
            "lines": lines,
            "statements": statements,
            "failed": recorder.failed,
            "import_lines": at_import,
        }
        report.write_text(json.dumps(found))
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
        import_lines=data["import_lines"],
    )


def _selected(mutant: Mutant, base: Baseline, killers: Counter[str]) -> list[str]:
    """The baseline tests that reach the mutant, cheapest kill first: a test's time divided by
    the mutants it killed so far. A mutant of code that runs at import (a table, a constant, a
    class body) may change what any test sees, and coverage cannot tell who reads a table:
    every test runs for it."""
    chosen: set[str] = set()
    if mutant.sql is not None:
        for statement in mutant.sql[2]:
            chosen.update(base.statements.get(statement, []))
    else:
        by_line = base.lines.get(mutant.path, {})
        for line in mutant.lines:
            chosen.update(by_line.get(line, []))
    ran_at_import = set(mutant.lines) & set(base.import_lines.get(mutant.path, []))
    if not chosen and (mutant.scope is not None or ran_at_import):
        chosen = set(base.durations)
    chosen -= set(base.failed)
    return sorted(chosen, key=lambda t: ((base.durations.get(t, 0.0) + 0.01) / (1 + killers[t]), t))


def _in_place(mutant: Mutant, base: Baseline) -> bool:
    """Whether the mutant can be swapped into code already imported: a statement, or the body
    of a function nobody called while importing."""
    if mutant.sql is not None:
        return True
    if mutant.outer is None:
        return False
    return not set(mutant.outer[1]) & set(base.import_lines.get(mutant.path, []))


# -- scheduling -----------------------------------------------------------------------------

Spawn = Callable[[Mutant, list[str], Path], int]


def _schedule(
    mutants: list[Mutant], base: Baseline, work: Path, spawn: Spawn, jobs: int, slack_s: float
) -> Iterator[Outcome]:
    """Each mutant's outcome as its child finishes, up to ``jobs`` children at once. A child's
    exit status says it all: 0 survived, ``_UNPATCHABLE`` could not swap the mutant in, else
    killed."""
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
            killer = work / f"killer-{os.getpid()}-{len(queue)}"
            pid = spawn(mutant, tests, killer)
            running[pid] = (mutant, len(tests), time.monotonic(), budget, killer)
        time.sleep(0.01)
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
                verdict = {0: "survived", _UNPATCHABLE: "unpatchable"}.get(code, "killed")
                if killer.exists():
                    killers[killer.read_text()] += 1
                    killer.unlink()
            del running[pid]
            yield Outcome(mutant, verdict, count, elapsed)


_UNPATCHABLE = 99


# -- fresh: the mutated module imported anew -------------------------------------------------


def _fresh_child(mutant: Mutant, tests: list[str], killer: Path) -> int:
    def child() -> int:
        _quiet()
        assert mutant.code is not None
        path = ROOT / mutant.path
        sys.meta_path.insert(0, _MutantFinder(_module_name(mutant.path), path, mutant.code))
        files = sorted({t.split("::")[0] for t in tests})
        # pytest rewrites the asserts of every module of a distribution that registers a
        # pytest plugin (awa does), and its import hook would load the unmutated module
        # before the finder above could serve the mutant
        args = ["-x", "-p", "no:randomly", "--assert=plain", *files]
        return _pytest(args, [_Select(tests, killer)])

    return _fork(child)


# -- in place: the pool collected once, the mutant swapped in --------------------------------


def _code_named(code: CodeType, qualname: str) -> CodeType:
    """The code object of function ``qualname`` inside a module's code."""
    for const in code.co_consts:
        if isinstance(const, CodeType):
            if const.co_qualname == qualname:
                return const
            with contextlib.suppress(LookupError):
                return _code_named(const, qualname)
    raise LookupError(qualname)


def _swap_in(mutant: Mutant) -> None:
    """Give the function holding the mutant its mutated code, or swap one SQL statement."""
    if mutant.sql is not None:
        from awa.adapters.postgres._sql import SQL, build_statements

        name, text, _ = mutant.sql
        texts = {p.name: p.read_text() for p in _SQL_FOLDER.iterdir()}
        before = dict(SQL)
        SQL.update(build_statements({**texts, name: text}))
        _rebind_kept_copies(before, SQL)
        return
    assert mutant.code is not None
    assert mutant.outer is not None
    qualname = mutant.outer[0]
    target: Any = importlib.import_module(_module_name(mutant.path))
    for part in qualname.split("."):
        target = vars(target)[part]
    function = getattr(target, "__func__", None) or getattr(target, "fget", None) or target
    function.__code__ = _code_named(mutant.code, qualname)


def _rebind_kept_copies(before: dict[str, str], after: dict[str, str]) -> None:
    """A module of the adapter that kept a statement's text at import (the portable insert
    ``caller_connections.py`` renders for each driver) gets the mutated text too."""
    changed = {before[name]: text for name, text in after.items() if before.get(name) != text}
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("awa.adapters.postgres"):
            continue
        for attribute, value in list(vars(module).items()):
            if isinstance(value, str) and value in changed:
                setattr(module, attribute, changed[value])


class _InPlaceServer:
    """A pytest plugin that takes over the test loop: after collection, it forks one child per
    mutant; the child swaps the mutant in and runs the chosen collected tests. Outcomes go to
    ``results``, one JSON line each, by the mutant's index."""

    def __init__(
        self,
        mutants: list[Mutant],
        base: Baseline,
        work: Path,
        results: Path,
        jobs: int,
        slack_s: float,
    ) -> None:
        self.mutants, self.base, self.work, self.results = mutants, base, work, results
        self.jobs, self.slack_s = jobs, slack_s

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> bool:
        items = {item.nodeid: item for item in session.items}

        def spawn(mutant: Mutant, tests: list[str], killer: Path) -> int:
            def child() -> int:
                _quiet()
                try:
                    _swap_in(mutant)
                except (LookupError, ValueError, TypeError):  # e.g. a changed closure
                    return _UNPATCHABLE
                chosen = [items[t] for t in tests if t in items]
                for n, item in enumerate(chosen):
                    following = chosen[n + 1] if n + 1 < len(chosen) else None
                    reports = runtestprotocol(item, nextitem=following, log=False)
                    if any(report.failed for report in reports):
                        killer.write_text(item.nodeid)
                        item.session._setupstate.teardown_exact(None)
                        return 1
                return 0

            return _fork(child)

        index = {id(m): n for n, m in enumerate(self.mutants)}
        with self.results.open("a") as out:
            for outcome in _schedule(
                self.mutants, self.base, self.work, spawn, self.jobs, self.slack_s
            ):
                line = {"index": index[id(outcome.mutant)], "status": outcome.status}
                out.write(
                    json.dumps({**line, "tests": outcome.tests, "seconds": outcome.seconds}) + "\n"
                )
                out.flush()
        return True


def _run_in_place(
    mutants: list[Mutant], base: Baseline, work: Path, pool: list[str], jobs: int, slack_s: float
) -> Iterator[Outcome]:
    results = work / f"in-place-{len(mutants)}-{time.monotonic_ns()}.jsonl"
    results.touch()
    server = _InPlaceServer(mutants, base, work, results, jobs, slack_s)

    def serve() -> int:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # pytest's own report; progress comes from the main process
        return _pytest(["-p", "no:randomly", *pool], [server])

    pid = _fork(serve)
    seen = 0
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        lines = results.read_text().splitlines()
        for line in lines[seen:]:
            data = json.loads(line)
            mutant = mutants[data["index"]]
            yield Outcome(mutant, data["status"], data["tests"], data["seconds"])
        seen = len(lines)
        if done:
            return
        time.sleep(0.2)


def run_mutants(
    mutants: list[Mutant],
    base: Baseline,
    work: Path,
    pool: list[str],
    *,
    jobs: int,
    slack_s: float,
) -> Iterator[Outcome]:
    """Each mutant's outcome: those that can be swapped in first, in one server that collects
    ``pool`` once, then the rest (and any that could not be swapped in after all) fresh."""
    in_place = [m for m in mutants if _in_place(m, base)]
    fresh = [m for m in mutants if not _in_place(m, base)]
    for outcome in _run_in_place(in_place, base, work, pool, jobs, slack_s) if in_place else ():
        if outcome.status == "unpatchable":
            fresh.append(outcome.mutant)
        else:
            yield outcome
    if any(m.sql is not None for m in fresh):
        raise AssertionError("SQL mutants are always swapped in")
    yield from _schedule(fresh, base, work, _fresh_child, jobs, slack_s)


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="awa-mutate-"))
