"""The main job of awa in one file: define a task, insert jobs, run a worker, see them finish.

python examples/quickstart.py                            # SQLite: examples/quickstart.db
python examples/quickstart.py memory://                  # in memory, nothing kept
python examples/quickstart.py postgresql://localhost/app # on PostgreSQL

On SQLite the jobs live in a file next to this example, kept between runs: kill the example
mid-run (even with kill -9) and the next run finishes what the killed one left, then its own
jobs. Delete quickstart.db to start afresh.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

import awa

DEFAULT_URL = f"sqlite:///{Path(__file__).with_name('quickstart.db')}"
UNFINISHED = ("scheduled", "available", "running", "waiting_external", "retryable")


@dataclass
class SendEmail:
    to: str
    subject: str


async def main(database_url: str) -> int:
    client = awa.AsyncClient(database_url)
    await client.migrate()
    sent: list[str] = []

    @client.task(SendEmail, queue="email")
    async def send_email(job: awa.Job[SendEmail]) -> object:
        if job.args.to.endswith("@flaky.example") and job.attempt == 1:
            return awa.RetryAfter(0.2)  # counts as an attempt; runs again shortly
        sent.append(f"{job.args.to}: {job.args.subject} (attempt {job.attempt})")
        return None

    left = [job for state in UNFINISHED for job in await client.list_jobs(state=state)]
    if left:
        print(f"finishing {len(left)} job(s) an earlier run left unfinished")
    jobs = [
        await client.insert(SendEmail("ada@example.com", "Welcome"), queue="email"),
        await client.insert(SendEmail("bob@flaky.example", "Your invoice"), queue="email"),
    ]
    # an attempt a killed run left running is presumed dead 2 s after its last heartbeat
    await client.start(
        [("email", 8)], poll_interval=0.05, heartbeat_interval=0.5, heartbeat_staleness=2
    )
    waited_for = [job.id for job in [*left, *jobs]]
    for _ in range(400):  # about 20 s at most
        states = [(await client.get_job(job_id)).state for job_id in waited_for]
        if all(state is awa.JobState.COMPLETED for state in states):
            break
        await asyncio.sleep(0.05)
    await client.shutdown(timeout=5)
    for line in sent:
        print("sent", line)
    for job_id in waited_for:
        final = await client.get_job(job_id)
        print(f"job {final.id} {final.kind}: {final.state.value} after {final.attempt} attempt(s)")
    await client.close()
    return 0 if all(s is awa.JobState.COMPLETED for s in states) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_URL)))
