"""End to end, against the peers: this repository's awa through the peers' workload.

    python bench/e2e_bench.py run [--reps 3] [--out /tmp/peerbench/ours.jsonl] [--only ...]
    python bench/e2e_bench.py table OURS.jsonl [PEERS.jsonl]

``run`` drives ``bench/peer_awa_main.py`` with the peers' own runner (``run_peers.py`` in
``shared/bench/peers``, imported, not copied): every measurement in a fresh subprocess against a
freshly dropped, created and migrated database, Postgres CPU read from ``/proc``, one JSON line
per measurement, the same fields as the peers' ``results_raw.jsonl``. The cluster is the one
that folder's README starts (``PEERBENCH_DSN``, ``PGDATA`` and ``PGBIN`` as there); run as a
user who can read the postmaster's ``/proc`` entries.

Workload (the peers'): enqueue 2,000 one by one and 20,000 in calls of 1,000; drain 20,000
pre-inserted no-op jobs by one worker process at the default concurrency, at 10 and at 50, and at
10 with a handler that sleeps 1 ms; pickup latency (insert -> handler start) of 200 jobs spaced
20 ms from a producer process to an idle worker process at concurrency 10.

``table`` prints one markdown table, ours beside each peer (median of reps, (min-max) spread),
with the ratio of ours to the best peer for each column.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PEERS_DIR = Path(os.environ.get("PEERBENCH_DIR", HERE.parents[1] / "shared" / "bench" / "peers"))
PEER = "awa-main"
ADAPTER = HERE / "peer_awa_main.py"
PEER_ORDER = [PEER, "pgqueuer", "awa", "chancy", "procrastinate"]
LABELS = {
    PEER: "**awa (this repo)**",
    "awa": "awa-pg (original AWA)",
}


def _runner() -> Any:
    """The peers' runner module, pointed at our adapter and this interpreter."""
    sys.path.insert(0, str(PEERS_DIR))
    import run_peers  # type: ignore[import-not-found]

    db = os.environ.get("AWA_BENCH_DB", "awa_main_bench")
    run_peers.DBS[PEER] = db

    def peer_cmd(peer: str, *args: str) -> list[str]:
        assert peer == PEER
        return [sys.executable, str(ADAPTER), *args]

    run_peers.peer_cmd = peer_cmd
    os.environ["AWA_BENCH_DB"] = db
    return run_peers


def cmd_run(a: argparse.Namespace) -> None:
    rp = _runner()
    only = set(a.only.split(","))
    confs: list[str | int] = ["default", 10, 50]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "a") as out:

        def rec(rep: int, res: dict[str, Any]) -> None:
            res.update({"peer": PEER, "rep": rep, "at": time.strftime("%Y-%m-%dT%H:%M:%S")})
            out.write(json.dumps(res) + "\n")
            out.flush()
            keys = ("cmd", "mode", "conc", "sleep_ms", "jobs_per_s", "p50_ms", "p95_ms")
            short = {k: res.get(k) for k in (*keys, "p99_ms", "py_cpu_s", "pg_cpu_s", "error")}
            print(rep, json.dumps(short), flush=True)

        for rep in range(1, a.reps + 1):
            if "enqueue" in only:
                for mode, n in (("one", a.n_one), ("bulk", a.n)):
                    args = ["enqueue", "--mode", mode, "--n", str(n), "--queue", f"e_{mode}_{rep}"]
                    rec(rep, rp.run_one(PEER, args))
            if "drain" in only:
                for c in confs:
                    args = ["drain", "--n", str(a.n), "--conc", str(c), "--queue", f"d_{c}_{rep}"]
                    rec(rep, rp.run_one(PEER, args))
            if "sleep" in only:
                args = ["drain", "--n", str(a.n), "--conc", "10", "--sleep-ms", "1"]
                rec(rep, rp.run_one(PEER, [*args, "--queue", f"s_{rep}"]))
            if "latency" in only:
                rec(rep, rp.run_latency(PEER, a.lat_n, 10, 20.0, rep))


# -- the combined table --------------------------------------------------------------------------
def _median_spread(xs: Iterable[float | None], digits: int = 0) -> str:
    vals = [x for x in xs if x is not None]
    if not vals:
        return "n/a"
    f = f"{{:,.{digits}f}}"
    med = f.format(statistics.median(vals))
    if len(vals) == 1:
        return med
    return f"{med} ({f.format(min(vals))}-{f.format(max(vals))})"


def _median(xs: Iterable[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None


def _groups(paths: list[str]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("error"):
                print(f"skipped (error): {r['peer']} {r.get('cmd')} {r['error']}", file=sys.stderr)
                continue
            cmd = r.get("cmd")
            if cmd == "enqueue":
                groups[(r["peer"], "enqueue", r["mode"])].append(r)
            elif cmd == "drain":
                groups[(r["peer"], "drain", str(r["conc"]), str(r.get("sleep_ms") or 0.0))].append(
                    r
                )
            elif cmd == "latency":
                groups[(r["peer"], "latency")].append(r)
    return groups


def cmd_table(a: argparse.Namespace) -> None:
    groups = _groups(a.files)
    peers = [p for p in PEER_ORDER if any(k[0] == p for k in groups)]

    def jobs(key: Callable[[str], tuple[str, ...]]) -> Callable[[str], tuple[str, float | None]]:
        def get(p: str) -> tuple[str, float | None]:
            rs = groups.get(key(p), [])
            return _median_spread(r["jobs_per_s"] for r in rs), _median(r["jobs_per_s"] for r in rs)

        return get

    def lat(p: str) -> tuple[str, float | None]:
        rs = groups.get((p, "latency"), [])
        if not rs:
            return "n/a", None
        parts = [_median(r[f"p{q}_ms"] for r in rs) for q in (50, 95, 99)]
        return " / ".join(f"{x:.1f}" for x in parts if x is not None), parts[0]

    cols: list[tuple[str, Callable[[str], tuple[str, float | None]], bool]] = [
        ("enqueue one-by-one jobs/s (2k)", jobs(lambda p: (p, "enqueue", "one")), True),
        ("enqueue bulk jobs/s (20k)", jobs(lambda p: (p, "enqueue", "bulk")), True),
        ("drain jobs/s, default", jobs(lambda p: (p, "drain", "default", "0.0")), True),
        ("drain, conc 10", jobs(lambda p: (p, "drain", "10", "0.0")), True),
        ("drain, conc 50", jobs(lambda p: (p, "drain", "50", "0.0")), True),
        ("drain, conc 10 + 1 ms handler", jobs(lambda p: (p, "drain", "10", "1.0")), True),
        ("pickup p50 / p95 / p99 ms", lat, False),
    ]
    print("| peer | version | " + " | ".join(c[0] for c in cols) + " |")
    print("|---|---|" + "---:|" * len(cols))
    best: dict[str, float] = {}
    ours: dict[str, float] = {}
    for p in peers:
        version = next(
            (r.get("version") for rs in groups.values() for r in rs if r["peer"] == p), ""
        )
        cells = []
        for title, get, higher in cols:
            text, value = get(p)
            cells.append(text)
            if value is None:
                continue
            if p == PEER:
                ours[title] = value
            elif title not in best or (value > best[title] if higher else value < best[title]):
                best[title] = value
        print(f"| {LABELS.get(p, p)} | {version} | " + " | ".join(cells) + " |")
    ratios = []
    for title, _, higher in cols:
        if title in ours and title in best and best[title]:
            r = ours[title] / best[title] if higher else best[title] / ours[title]
            ratios.append(f"{title}: {r:.2f}x the best peer")
    if ratios:
        print("\nOurs against the best peer (>1 is better): " + "; ".join(ratios) + ".")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="measure (appends JSON lines to --out)")
    run.add_argument("--reps", type=int, default=3)
    run.add_argument("--n", type=int, default=20000)
    run.add_argument("--n-one", type=int, default=2000)
    run.add_argument("--lat-n", type=int, default=200)
    run.add_argument("--only", default="enqueue,drain,sleep,latency")
    run.add_argument("--out", default="/tmp/peerbench/ours.jsonl")
    table = sub.add_parser("table", help="print the combined markdown table")
    table.add_argument("files", nargs="+")
    a = ap.parse_args()
    cmd_run(a) if a.cmd == "run" else cmd_table(a)


if __name__ == "__main__":
    main()
