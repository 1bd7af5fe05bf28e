"""Public testing tools: ``TestClient`` and ``make_job`` for your handlers' tests (and a pytest
plugin, ``awa.testing.pytest_plugin``, with ``awa_client`` and ``awa_clock`` fixtures), the
store contract suite (``awa.testing.contract``), the lifecycle state machine
(``awa.testing.state_machine``), Hypothesis strategies (``awa.testing.strategies``),
scenarios (``awa.testing.scenarios``), the agreement program that runs one random program on
the memory store and on another store and compares every answer (``awa.testing.agreement``),
and the deterministic simulator (``awa.testing.simulation``). The contract, state machine and
agreement program need the ``awa[testing]`` extra (pytest, hypothesis); ``TestClient`` and
``make_job`` need nothing more than awa."""

from awa.testing.client import TestClient, WorkResult, make_job

__all__ = ["TestClient", "WorkResult", "make_job"]
