"""The PostgreSQL adapter: ``PostgresStore`` (a ``ClaimStore`` on psycopg 3), migrations, and
transactional enqueue on a connection the caller holds."""

from awa.adapters.postgres._errors import MIGRATE_HINT, SchemaNewerThanCode
from awa.adapters.postgres.inserts.router import insert_jobs, insert_jobs_async
from awa.adapters.postgres.listen import CALLBACK_CHANNEL, CANCEL_CHANNEL, WAKEUP_CHANNEL
from awa.adapters.postgres.migrations import LATEST_VERSION, migrate, schema_version
from awa.adapters.postgres.store import PostgresStore

__all__ = [
    "CALLBACK_CHANNEL",
    "CANCEL_CHANNEL",
    "LATEST_VERSION",
    "MIGRATE_HINT",
    "WAKEUP_CHANNEL",
    "PostgresStore",
    "SchemaNewerThanCode",
    "insert_jobs",
    "insert_jobs_async",
    "migrate",
    "schema_version",
]
