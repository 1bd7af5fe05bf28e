"""The Django application ``awa worker`` runs in tests/postgres/test_django_connections.py:
``awa worker tests.postgres.django_worker_app:client``, the database in ``AWA_DATABASE_URL``
(awa's jobs and Django's ``default`` database are the same one, as in most projects).

``AWA_TEST_DJANGO_DATABASE`` (JSON) adds to Django's database settings, e.g.
``{"CONN_MAX_AGE": null, "CONN_HEALTH_CHECKS": true}``.

Two tasks write a ``visits`` row for their job through Django's own connection: ``visit`` is a
sync handler (the ORM on its handler thread), ``visit_async`` an async one (the ORM through
``sync_to_async``, on asgiref's thread-sensitive thread). Neither touches awa's connections.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

import django
from django.conf import settings

import awa

URL = os.environ["AWA_DATABASE_URL"]
_parts = urlsplit(URL)
settings.configure(
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": _parts.path.lstrip("/"),
            "USER": _parts.username,
            "HOST": _parts.hostname,
            "PORT": _parts.port,
            **json.loads(os.environ.get("AWA_TEST_DJANGO_DATABASE", "{}")),
        }
    },
    USE_TZ=True,
)
django.setup()

from asgiref.sync import sync_to_async  # noqa: E402  (after the settings, as in a project)
from django.db import connection  # noqa: E402

client = awa.AsyncClient(URL)


@dataclass
class Visit:
    n: int


@dataclass
class VisitAsync:
    n: int


def record_visit(job_id: int) -> None:
    with connection.cursor() as cur:
        cur.execute("INSERT INTO visits (job_id) VALUES (%s)", [job_id])


@client.task(Visit, kind="visit")
def visit(job: awa.SyncJob[Visit]) -> None:
    record_visit(job.id)


@client.task(VisitAsync, kind="visit_async")
async def visit_async(job: awa.Job[VisitAsync]) -> None:
    await sync_to_async(record_visit)(job.id)
