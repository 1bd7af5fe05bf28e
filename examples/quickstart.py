"""The main job of awa in one file: define a task, insert jobs, run a worker, see them finish.

python examples/quickstart.py                          # in memory, no set-up
python examples/quickstart.py postgresql://localhost/app  # on PostgreSQL
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

import awa


@dataclass
class SendEmail:
    to: str
    subject: str


async def main(database_url: str | None) -> int:
    client = (
        awa.AsyncClient(database_url) if database_url else awa.AsyncClient(store=awa.MemoryStore())
    )
    await client.migrate()
    sent: list[str] = []

    @client.task(SendEmail, queue="email")
    async def send_email(job: awa.Job[SendEmail]) -> object:
        if job.args.to.endswith("@flaky.example") and job.attempt == 1:
            return awa.RetryAfter(0.2)  # counts as an attempt; runs again shortly
        sent.append(f"{job.args.to}: {job.args.subject} (attempt {job.attempt})")
        return None

    jobs = [
        await client.insert(SendEmail("ada@example.com", "Welcome"), queue="email"),
        await client.insert(SendEmail("bob@flaky.example", "Your invoice"), queue="email"),
    ]
    await client.start([("email", 8)], poll_interval=0.05)
    for _ in range(200):  # about 10 s at most
        states = [(await client.get_job(job.id)).state for job in jobs]
        if all(state is awa.JobState.COMPLETED for state in states):
            break
        await asyncio.sleep(0.05)
    await client.shutdown(timeout=5)
    for line in sent:
        print("sent", line)
    for job in jobs:
        final = await client.get_job(job.id)
        print(f"job {final.id} {final.kind}: {final.state.value} after {final.attempt} attempt(s)")
    await client.close()
    return 0 if all(s is awa.JobState.COMPLETED for s in states) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None)))
