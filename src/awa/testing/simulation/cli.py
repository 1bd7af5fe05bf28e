"""``awa simulate`` (also ``python -m awa.testing.simulation``): run a seeded simulation and
print what happened."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence

import attrs

from awa.testing.simulation.world import Faults, Simulation

__all__ = ["add_arguments", "main", "run_from_args"]

_RATES = [f.name for f in attrs.fields(Faults)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="the seed: same seed, same history")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=5, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=4, help="slots per queue per worker")
    parser.add_argument(
        "--steps", type=int, default=None, help="steps with faults on (default: 10 per job)"
    )
    parser.add_argument("--no-faults", action="store_true", help="every fault rate at zero")
    parser.add_argument("--history", action="store_true", help="print every step")
    defaults = Faults()
    for name in _RATES:
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=float,
            default=None,
            help=f"default {getattr(defaults, name)}",
        )


def run_from_args(args: argparse.Namespace) -> int:
    faults = Faults.none() if args.no_faults else Faults()
    overrides = {n: getattr(args, n) for n in _RATES if getattr(args, n) is not None}
    faults = attrs.evolve(faults, **overrides)
    if args.jobs < 1 or args.workers < 1:
        print("awa simulate: --jobs and --workers must be at least 1", file=sys.stderr)
        return 2
    # the simulated workers' per-attempt log lines (thousands, by design failures) are not the
    # report; with no logging set up Python would print every warning among them on stderr
    logging.getLogger("awa.worker").addHandler(logging.NullHandler())
    started = time.perf_counter()
    report = Simulation(
        args.seed,
        jobs=args.jobs,
        workers=args.workers,
        steps=args.steps,
        faults=faults,
        concurrency=args.concurrency,
    ).run()
    if args.history:
        print("\n".join(report.history))
    print(report.summary())
    print(f"wall time {time.perf_counter() - started:.2f} s")
    if not report.ok:
        options = {"workers": args.workers, "concurrency": args.concurrency}
        if args.steps is not None:
            options["steps"] = args.steps
        options.update(overrides)
        replay = report.replay_command(**options)
        print(f"replay with: {replay}{' --no-faults' if args.no_faults else ''}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="awa simulate", description="Run awa's runtime in a seeded world of faults."
    )
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))
