"""``awa worker``: what it refuses (one line each), and how it stops (the first signal is
graceful and exits 0, the second exits at once), on applications using the in-memory store
(``tests/cli/worker_apps.py``). The PostgreSQL run is tests/postgres/test_worker_command.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.processes import WAIT_S, free_port, get, wait_for

from .conftest import ROOT, run_awa

APPS = "tests.cli.worker_apps"


@pytest.mark.parametrize(
    ("args", "env", "code", "fragment"),
    [
        ((), {}, 2, "name the application's client"),
        (("nowhere_at_all:client",), {}, 1, "cannot import 'nowhere_at_all'"),
        ((f"{APPS}",), {}, 1, "APP is module:attribute"),
        ((f"{APPS}:nothing",), {}, 1, "has no attribute 'nothing'"),
        ((f"{APPS}:not_a_client",), {}, 1, "is str, not an awa AsyncClient or Client"),
        ((f"{APPS}:empty",), {}, 1, "no task is registered: add a handler"),
        ((f"{APPS}:client", "--queue", "media"), {}, 1, "no task is registered on queue 'media'"),
        ((f"{APPS}:client", "--queue", "Bad Queue"), {}, 1, "invalid queue name"),
        ((f"{APPS}:client", "--log-format", "xml"), {}, 2, "expected one of text, json"),
        ((f"{APPS}:client", "--health-port", "0"), {}, 2, "expected a number >= 1"),
        ((f"{APPS}:client",), {"AWA_METRICS_PORT": "ninety"}, 2, "$AWA_METRICS_PORT"),
        ((f"{APPS}:client",), {"AWA_QUEUES": "email=many"}, 2, "$AWA_QUEUES"),
        ((f"{APPS}:client", "--global-max-workers", "0"), {}, 2, "expected a number >= 1"),
        (
            (f"{APPS}:client", "--global-max-workers", "20000"),
            {},
            1,
            "global_max_workers must be an integer from 1 to 10000, got 20000",
        ),
        (("--database-url", "postgresql://x/y", f"{APPS}:client"), {}, 2, "unrecognized"),
    ],
    ids=lambda value: str(value)[:40],
)
def test_awa_worker_refuses_what_it_cannot_run_in_one_line(
    args: tuple[str, ...], env: dict[str, str], code: int, fragment: str
) -> None:
    run_awa("worker", *args, url=None, env=env).assert_one_line_error(fragment, code=code)


def test_awa_worker_refuses_a_database_url_given_before_the_command() -> None:
    ran = run_awa("--database-url", "postgresql://x/y", "worker", f"{APPS}:client", url=None)
    ran.assert_one_line_error("give that client its URL", "not --database-url", code=2)


def _ready(port: int) -> bool:
    return get(f"http://127.0.0.1:{port}/readyz")[0] == 200


class Worker:
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="awa-worker-cli-"))
        self.log_path = self.dir / "worker.log"
        self.signal_file = self.dir / "signal"
        self._log = self.log_path.open("wb")
        environment = {
            k: v for k, v in os.environ.items() if not k.startswith(("AWA_", "DATABASE_URL"))
        }
        environment.update(PYTHONPATH=str(ROOT / "src"), AWA_TEST_SIGNAL_FILE=str(self.signal_file))
        environment.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "awa", "worker", *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=environment,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, condition: Callable[[], Any], what: str) -> None:
        wait_for(self.proc, condition, what, self.log)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT_S)
        self._log.close()


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.close()


def test_sigterm_stops_the_worker_cleanly_with_exit_code_0(workers: list[Worker]) -> None:
    port = free_port()
    worker = Worker(f"{APPS}:client", "--health-port", str(port), "--host", "127.0.0.1")
    workers.append(worker)
    worker.wait_for(lambda: _ready(port), "/readyz answered 200")
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.proc.wait(timeout=WAIT_S) == 0
    log = worker.log()
    assert "started on queues email" in log
    assert "SIGTERM: stopping; running handlers have 30s to finish" in log
    assert "stopped (0 running attempts released)" in log
    assert "Traceback" not in log


def test_a_worker_sharing_its_slots_starts_and_stops_cleanly(workers: list[Worker]) -> None:
    port = free_port()
    args = ("--queue", "email=2", "--global-max-workers", "4", "--health-port", str(port))
    worker = Worker(f"{APPS}:client", *args, "--host", "127.0.0.1")
    workers.append(worker)
    worker.wait_for(lambda: _ready(port), "/readyz answered 200")
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.proc.wait(timeout=WAIT_S) == 0
    assert "Traceback" not in worker.log()


def test_a_sync_client_named_by_the_environment_stops_on_sigint(workers: list[Worker]) -> None:
    port = free_port()
    env = {
        "AWA_APP": f"{APPS}:sync_client",
        "AWA_QUEUES": "email=2",
        "AWA_HEALTH_PORT": str(port),
        "AWA_HOST": "127.0.0.1",
        "AWA_LOG_FORMAT": "json",
    }
    worker = Worker(env=env)
    workers.append(worker)
    worker.wait_for(lambda: _ready(port), "/readyz answered 200")
    worker.proc.send_signal(signal.SIGINT)
    assert worker.proc.wait(timeout=WAIT_S) == 0
    assert '"signal": "SIGINT"' in worker.log()


def test_a_second_signal_exits_at_once_without_waiting_for_handlers(
    workers: list[Worker],
) -> None:
    worker = Worker(f"{APPS}:hanging", "--shutdown-timeout", "600")
    workers.append(worker)
    worker.wait_for(worker.signal_file.exists, "the hanging job started")
    worker.proc.send_signal(signal.SIGTERM)
    worker.wait_for(lambda: "SIGTERM: stopping" in worker.log(), "the graceful stop began")
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.proc.wait(timeout=WAIT_S) == 128 + signal.SIGTERM
    assert "SIGTERM again: exiting now" in worker.log()


def test_a_health_port_in_use_is_one_line(workers: list[Worker]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = run_awa(
            "worker", f"{APPS}:client", "--health-port", str(port), "--host", "127.0.0.1",
            url=None,
        )  # fmt: skip
    line = ran.assert_one_line_error(f"cannot serve health on 127.0.0.1:{port}", code=1)
    assert "in use" in line


def _this_machine_on_the_network() -> str | None:
    """An address of this machine other than loopback (``None`` when it has none)."""
    for somewhere in ("10.254.254.254", "192.0.2.1"):  # private and documentation networks
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.connect((somewhere, 9))  # a UDP "connect" sends nothing: it picks a route
            except OSError:
                continue
            address = str(s.getsockname()[0])
        if not address.startswith("127."):
            return address
    return None


def _refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize(
    ("host_args", "open_to_the_network"),
    [((), False), (("--host", "0.0.0.0"), True)],
    ids=["by-default-this-machine-only", "host-0.0.0.0-opens-them"],
)
def test_the_endpoints_listen_on_this_machine_only_unless_opened(
    workers: list[Worker], host_args: tuple[str, ...], open_to_the_network: bool
) -> None:
    address = _this_machine_on_the_network()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    health, metrics = free_port(), free_port()
    ports = ("--health-port", str(health), "--metrics-port", str(metrics))
    worker = Worker(f"{APPS}:client", *ports, *host_args)
    workers.append(worker)
    worker.wait_for(lambda: _ready(health), "/readyz answered 200 on 127.0.0.1")
    assert get(f"http://127.0.0.1:{metrics}/metrics")[0] == 200
    for port in (health, metrics):
        assert _refused(address, port) is not open_to_the_network, (address, port)
    if open_to_the_network:
        assert get(f"http://{address}:{health}/healthz") == (200, '{"alive": true}')
