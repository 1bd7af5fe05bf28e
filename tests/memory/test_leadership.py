"""In memory, leadership is a lease on the store's clock: it lapses if not renewed."""

from awa.adapters.memory import ManualClock, MemoryStore


def test_leadership_moves_when_the_leader_stops_renewing() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    assert store.try_lead("a", ttl_s=10)
    clock.advance(9)
    assert not store.try_lead("b", ttl_s=10)
    assert store.try_lead("a", ttl_s=10)  # renewed at t=9, so it holds until t=19
    clock.advance(10)
    assert store.try_lead("b", ttl_s=10)
    assert not store.try_lead("a", ttl_s=10)


def test_leadership_lapses_at_the_very_instant_it_expires() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    assert store.try_lead("a", ttl_s=10)
    assert store.leader() == "a"
    clock.advance(10)
    assert store.leader() is None
    assert store.try_lead("b", ttl_s=10)
    assert store.leader() == "b"


def test_nobody_leads_a_new_store() -> None:
    store = MemoryStore(ManualClock())
    assert store.leader() is None
    store.release_lead("nobody")
    assert store.leader() is None
