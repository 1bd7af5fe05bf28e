"""Mutation testing of awa's lifecycle: does the suite fail when the code is wrong?

    python tools/mutate.py                 # everything (an hour or two on two cores)
    python tools/mutate.py --only domain   # one group: domain, core, memory, sql
    python tools/mutate.py --only src/awa/domain/backoff.py --list

Mutates the domain, the fenced core, the memory store (small AST changes) and the PostgreSQL
adapter's statements (small SQL changes); runs, per mutant, the fast tests that reach it
(Python: the domain, contract, memory and runtime suites on the memory store; SQL: the
PostgreSQL suites, on a throwaway cluster); prints the score per file and every survivor.
Not part of CI. docs/testing.md explains the report and lists why each survivor is harmless.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from mutation.python_ops import Mutant, enum_members, python_mutants
from mutation.runner import ROOT, Baseline, Outcome, baseline, preload, run_mutants, scratch
from mutation.sql_ops import sql_mutants

DOMAIN = [
    f"src/awa/domain/{name}.py"
    for name in (
        "transitions",
        "decisions",
        "endings",
        "backoff",
        "outcomes",
        "validation",
        "fencing",
        "rescue",
        "states",
        "values",
        "unique",
        "periodic",
    )
]
GROUPS: dict[str, list[str]] = {
    "domain": DOMAIN,
    "core": [
        *sorted(
            str(p.relative_to(ROOT))
            for p in (ROOT / "src/awa/adapters/core").iterdir()
            if p.suffix == ".py" and p.name != "__init__.py"
        ),
        "src/awa/adapters/_fencing.py",
        "src/awa/ports/checks.py",
    ],
    "memory": [
        "src/awa/adapters/memory/store.py",
        "src/awa/adapters/memory/table.py",
        "src/awa/adapters/memory/transaction.py",
    ],
    "sql": sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "src/awa/adapters/postgres/sql").iterdir()
        if p.suffix in (".sql", ".sqlpart")
    ),
}
ENUM_SOURCES = [
    "src/awa/domain/states.py",
    "src/awa/domain/transitions.py",
    "src/awa/domain/values.py",
    "src/awa/domain/rescue.py",
    "src/awa/domain/fencing.py",
    "src/awa/domain/endings.py",
]
#: the fast suites, on the memory store
PYTHON_POOL = [
    "tests/domain",
    "tests/contract",
    "tests/memory",
    "tests/runtime",
    "-m",
    "not postgres",
]
#: the PostgreSQL suites about the adapter's statements (not the runtime's end-to-end runs,
#: nor worker subprocesses, which would load the statements unmutated)
SQL_POOL = [
    f"tests/postgres/{name}.py"
    for name in (
        "test_contract",
        "test_row_locks",
        "test_lease_guard",
        "test_hostile_input",
        "test_enqueue_and_notify",
        "test_hints_and_leadership",
        "test_async_inserts",
        "test_migrations",
        "test_concurrency",
        "test_agreement",
        "test_state_machine",
        "test_caller_connections",
        "test_unique_on_caller_connections",
        "test_flow_limits",
        "test_flow_keys",
        "test_flow_turns",
    )
]


def _mutants(files: list[str]) -> list[Mutant]:
    members = enum_members([ROOT / p for p in ENUM_SOURCES])
    found: list[Mutant] = []
    for path in files:
        if path.endswith((".sql", ".sqlpart")):
            found += sql_mutants(ROOT / path, path)
        else:
            found += python_mutants(ROOT / path, path, members)
    return found


def _group(path: str) -> str:
    return next(name for name, files in GROUPS.items() if path in files)


def _report(outcomes: list[Outcome], markdown: bool) -> str:
    by_file: dict[str, Counter[str]] = defaultdict(Counter)
    for outcome in outcomes:
        by_file[outcome.mutant.path][outcome.status] += 1
    rows = []
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    for path in sorted(by_file, key=lambda p: (list(GROUPS).index(_group(p)), p)):
        counts = by_file[path]
        totals[_group(path)] += counts
        rows.append((path, counts))
    rows += [(f"{name} (all)", totals[name]) for name in GROUPS if name in totals]
    lines = []
    if markdown:
        lines += ["| file | mutants | killed | timed out | survived | uncovered | score |"]
        lines += ["| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, c in rows:
        total = sum(c.values())
        score = 100.0 * (c["killed"] + c["timeout"]) / total if total else 100.0
        cells = [name, total, c["killed"], c["timeout"], c["survived"], c["uncovered"]]
        if markdown:
            lines.append("| " + " | ".join(map(str, cells)) + f" | {score:.1f}% |")
        else:
            lines.append(
                f"{name:<48} {total:>5} {c['killed']:>6} {c['timeout']:>4}"
                f" {c['survived']:>4} {c['uncovered']:>4} {score:6.1f}%"
            )
    if not markdown:
        lines.insert(
            0,
            f"{'file':<48} {'all':>5} {'killed':>6} {'time':>4} {'surv':>4}"
            f" {'unc':>4} {'score':>7}",
        )
    survivors = [o for o in outcomes if o.status in ("survived", "uncovered")]
    lines += ["", f"survivors ({len(survivors)}):"]
    for o in sorted(survivors, key=lambda o: (o.mutant.path, o.mutant.line)):
        m = o.mutant
        lines.append(
            f"  {m.path}:{m.line} ({m.function}) {m.operator}: {m.description}"
            + (" [no test reaches it]" if o.status == "uncovered" else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="a group (domain, core, memory, sql) or a file; repeatable",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument(
        "--slack",
        type=float,
        default=30.0,
        help="seconds a mutant's tests may take beyond 3x their baseline time",
    )
    parser.add_argument("--markdown", action="store_true", help="the score table as Markdown")
    parser.add_argument("--results", type=Path, help="also write every outcome here (JSON lines)")
    parser.add_argument(
        "--rerun", type=Path, help="only the mutants that survived in this earlier --results file"
    )
    args = parser.parse_args(argv)

    files = [f for name in (args.only or list(GROUPS)) for f in GROUPS.get(name, [name])]
    mutants = _mutants(files)
    if args.rerun:
        earlier = [json.loads(line) for line in args.rerun.read_text().splitlines()]
        again = {o["key"] for o in earlier if o["status"] in ("survived", "uncovered")}
        mutants = [m for m in mutants if m.key in again]
    if args.list:
        for m in mutants:
            print(f"{m.path}:{m.line} ({m.function}) {m.operator}: {m.description}")
        print(f"{len(mutants)} mutants")
        return 0

    preload()
    work = scratch()
    outcomes: list[Outcome] = []
    python = [m for m in mutants if m.sql is None]
    sql = [m for m in mutants if m.sql is not None]
    started = time.monotonic()
    if python:
        targets = sorted({m.path for m in python})
        print(f"baseline: {' '.join(PYTHON_POOL)} ...", file=sys.stderr, flush=True)
        base = baseline("python", PYTHON_POOL, targets, work / "python.json")
        outcomes += _run(python, base, work, PYTHON_POOL, args)
    if sql:
        outcomes += _run_sql(sql, work, args)
    print(_report(outcomes, args.markdown))
    print(f"\n{len(outcomes)} mutants in {time.monotonic() - started:,.0f} s", file=sys.stderr)
    if args.results:
        with args.results.open("w") as out:
            for o in outcomes:
                out.write(
                    json.dumps(
                        {
                            "key": o.mutant.key,
                            "line": o.mutant.line,
                            "status": o.status,
                            "tests": o.tests,
                            "seconds": round(o.seconds, 2),
                        }
                    )
                    + "\n"
                )
    return 0


def _run(
    mutants: list[Mutant], base: Baseline, work: Path, pool: list[str], args: argparse.Namespace
) -> list[Outcome]:
    outcomes = []
    for n, outcome in enumerate(
        run_mutants(mutants, base, work, pool, jobs=args.jobs, slack_s=args.slack), 1
    ):
        outcomes.append(outcome)
        m = outcome.mutant
        print(
            f"[{n}/{len(mutants)}] {outcome.status:<9} {m.path}:{m.line} {m.operator}:"
            f" {m.description} ({outcome.tests} tests, {outcome.seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    return outcomes


def _run_sql(mutants: list[Mutant], work: Path, args: argparse.Namespace) -> list[Outcome]:
    """The SQL mutants share one throwaway PostgreSQL cluster; each child's test session makes
    its own database on it."""
    import os
    import signal

    sys.path.insert(0, str(ROOT))
    from tests.pg_fixtures import LocalCluster, _bindir

    bindir = _bindir()
    if bindir is None and not os.environ.get("AWA_TEST_DATABASE_URL"):
        raise SystemExit("the SQL mutants need PostgreSQL: install it or set AWA_TEST_DATABASE_URL")
    cluster = None
    # a stopped run (kill PID) still stops its cluster
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not os.environ.get("AWA_TEST_DATABASE_URL"):
        assert bindir is not None
        cluster = LocalCluster(bindir)
        os.environ["AWA_TEST_DATABASE_URL"] = cluster.start()
    try:
        print(f"baseline: {' '.join(SQL_POOL)} ...", file=sys.stderr, flush=True)
        base = baseline("sql", SQL_POOL, [], work / "sql.json")
        return _run(mutants, base, work, SQL_POOL, args)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
