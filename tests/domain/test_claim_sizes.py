"""``claim_size``: overlapping claims of one queue never ask, together with what runs and what
is held ahead, for more than its slots and claim-ahead allowance."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from awa.domain.claim_sizes import claim_size


def test_a_claim_asks_for_the_free_slots_less_what_is_asked_for_already() -> None:
    sizes = dict(slots=8, running=2, waiting=0, ahead=0, batch_max=100)
    assert claim_size(in_flight=0, **sizes) == 6
    assert claim_size(in_flight=4, **sizes) == 2
    assert claim_size(in_flight=6, **sizes) == 0
    assert claim_size(in_flight=0, **{**sizes, "batch_max": 5}) == 5
    assert claim_size(in_flight=0, **{**sizes, "ahead": 3, "waiting": 1}) == 8


@given(
    slots=st.integers(1, 50),
    ahead=st.integers(0, 50),
    batch_max=st.integers(1, 20),
    steps=st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=40),
)
def test_claims_in_flight_never_ask_for_more_than_the_slots_and_the_allowance(
    slots: int, ahead: int, batch_max: int, steps: list[tuple[bool, int]]
) -> None:
    """Claims are sent (sized by ``claim_size``) and land in any order, each bringing back
    at most what it asked for; the jobs it brings run if a slot is free, else wait ahead."""
    running, waiting, in_flight = 0, 0, []
    for send, pick in steps:
        if send or not in_flight:
            size = claim_size(
                slots=slots,
                running=running,
                waiting=waiting,
                in_flight=sum(in_flight),
                ahead=ahead,
                batch_max=batch_max,
            )
            assert 0 <= size <= batch_max
            if size:
                in_flight.append(size)
        else:
            asked = in_flight.pop(pick % len(in_flight))
            got = min(asked, pick)
            started = min(got, slots - running)
            running, waiting = running + started, waiting + got - started
        assert running + waiting + sum(in_flight) <= slots + ahead
        if pick % 3 == 0 and running:  # a handler ends
            running -= 1
