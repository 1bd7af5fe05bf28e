"""Public testing tools: the store contract suite (``awa.testing.contract``), the lifecycle
state machine (``awa.testing.state_machine``), Hypothesis strategies
(``awa.testing.strategies``), scenarios (``awa.testing.scenarios``) and the deterministic
simulator (``awa.testing.simulation``). The contract and state machine need the
``awa[testing]`` extra (pytest, hypothesis)."""
