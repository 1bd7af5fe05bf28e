"""One library's side of ``bench/scale_bench.py``, run by that library's interpreter.

    python bench/scale_child.py PEER setup
    python bench/scale_child.py PEER fill --n 1000000 --queue q [--segment 100000]
    python bench/scale_child.py PEER one --n 2000 --queue q
    python bench/scale_child.py PEER work --conc 50 --queue q

PEER is ``awa-main`` (this repository, ``bench/peer_awa_main.py``), ``pgqueuer`` or ``awa``
(awa-pg): the adapters of ``shared/bench/peers`` (``PEERBENCH_DIR``), imported, not copied, so
every library is driven through the same API choices as in the peers' benchmark.

``fill`` bulk-inserts through the adapter's ``enqueue_bulk`` in calls of 1,000 and prints one
JSON line per ``--segment`` jobs: the rows already there and the segment's insert rate (the
insert rate as the table grows). ``one`` inserts one by one. ``work`` prints ``READY`` once
connected, starts the worker when a line ``go`` arrives on stdin, prints ``H <handled>`` as the
handler count moves (at most every 20 ms), and stops the worker when stdin closes.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PEERS_DIR = Path(os.environ.get("PEERBENCH_DIR", HERE.parents[2] / "shared" / "bench" / "peers"))
sys.path.insert(0, str(PEERS_DIR))
ADAPTERS = {
    "awa-main": ("peer_awa_main", "AwaMainPeer"),
    "pgqueuer": ("peer_pgqueuer", "PgQueuerPeer"),
    "awa": ("peer_awa", "AwaPeer"),
}


def _adapter(peer: str) -> Any:
    if peer == "awa-main":
        sys.path.insert(0, str(HERE))
    module, cls = ADAPTERS[peer]
    return getattr(importlib.import_module(module), cls)()


def _line(obj: Any) -> None:
    print(json.dumps(obj) if isinstance(obj, dict) else obj, flush=True)


async def fill(adapter: Any, queue: str, n: int, segment: int) -> None:
    for start in range(0, n, segment):
        size = min(segment, n - start)
        payloads = [{"seq": start + i, "ts": 0.0} for i in range(size)]
        t = time.perf_counter()
        await adapter.enqueue_bulk(queue, payloads)
        rate = size / (time.perf_counter() - t)
        _line({"rows_before": start, "jobs": size, "jobs_per_s": round(rate)})


async def one(adapter: Any, queue: str, n: int) -> None:
    payloads = [{"seq": i, "ts": 0.0} for i in range(n)]
    t = time.perf_counter()
    await adapter.enqueue_one(queue, payloads)
    _line({"one_by_one": n, "jobs_per_s": round(n / (time.perf_counter() - t))})


async def work(adapter: Any, queue: str, conc: int) -> None:
    handled = 0

    async def handler(args: dict[str, Any]) -> None:
        nonlocal handled
        handled += 1

    loop = asyncio.get_running_loop()
    _line("READY")
    if (await loop.run_in_executor(None, sys.stdin.readline)).strip() != "go":
        return
    await adapter.start_worker(queue, conc, handler)
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)
    shown = -1
    while not stdin_closed.done():
        if handled != shown:
            shown = handled
            _line(f"H {handled}")
        await asyncio.sleep(0.02)
    await adapter.stop_worker()


async def amain(argv: list[str]) -> None:
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("peer", choices=sorted(ADAPTERS))
    p.add_argument("cmd", choices=["setup", "fill", "one", "work"])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--segment", type=int, default=100000)
    p.add_argument("--queue", default="bench")
    p.add_argument("--conc", type=int, default=50)
    a = p.parse_args(argv)
    adapter = _adapter(a.peer)
    await adapter.open()
    try:
        if a.cmd == "setup":
            await adapter.setup()
        elif a.cmd == "fill":
            await fill(adapter, a.queue, a.n, a.segment)
        elif a.cmd == "one":
            await one(adapter, a.queue, a.n)
        else:
            await work(adapter, a.queue, a.conc)
    finally:
        await adapter.close()


if __name__ == "__main__":
    asyncio.run(amain(sys.argv[1:]))
    sys.stdout.flush()
    os._exit(0)  # some runtimes leave non-daemon threads behind
