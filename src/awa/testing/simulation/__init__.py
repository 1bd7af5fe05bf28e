"""Deterministic simulation of the real runtime under crashes, stalls and late finishes.

``Simulation(seed, jobs=..., workers=..., faults=Faults(...)).run()`` returns a
``SimulationReport``; the same seed gives the same history and digest. See docs/simulation.md.
"""

from awa.testing.simulation.world import Faults, Simulation, SimulationReport

__all__ = ["Faults", "Simulation", "SimulationReport"]
