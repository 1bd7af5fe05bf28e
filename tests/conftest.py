"""Hypothesis profiles: ``dev`` by default, ``ci`` when CI is set (``HYPOTHESIS_PROFILE``
overrides both). PostgreSQL test fixtures for every folder come from ``tests/pg_fixtures.py``."""

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.pg_fixtures"]

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
