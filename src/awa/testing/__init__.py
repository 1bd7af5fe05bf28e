"""Public testing tools: ``TestClient`` and ``make_job`` for your handlers' tests (and a pytest
plugin, ``awa.testing.pytest_plugin``, with ``awa_client`` and ``awa_clock`` fixtures), the
store contract suite (``awa.testing.contract``), the lifecycle state machine
(``awa.testing.state_machine``), Hypothesis strategies (``awa.testing.strategies``),
scenarios (``awa.testing.scenarios``) and the deterministic simulator
(``awa.testing.simulation``). The contract and state machine need the ``awa[testing]`` extra
(pytest, hypothesis); ``TestClient`` and ``make_job`` need nothing more than awa."""

from awa.testing.client import TestClient, WorkResult, make_job

__all__ = ["TestClient", "WorkResult", "make_job"]
