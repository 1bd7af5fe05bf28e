"""The refusals table itself: it reaches every verb, and each row is one distinct check."""

import inspect

from awa.ports import ClaimStore
from awa.testing.contract import REFUSALS


def _verbs_taking_arguments(port: type) -> set[str]:
    """The port's verbs, its own and its roles' (``ClaimStore`` is the union of its roles)."""
    return {
        name
        for role in port.__mro__
        for name, member in vars(role).items()
        if not name.startswith("_")
        and inspect.isfunction(member)
        and len(inspect.signature(member).parameters) > 1
    }


def test_every_verb_that_takes_arguments_has_a_refusal() -> None:
    assert _verbs_taking_arguments(ClaimStore) <= {r.verb for r in REFUSALS}


def test_every_row_names_a_verb_of_the_port_or_of_its_capability() -> None:
    for row in REFUSALS:
        port = row.capability or ClaimStore
        assert row.verb in _verbs_taking_arguments(port), row.id


def test_no_two_rows_share_an_id() -> None:
    ids = [r.id for r in REFUSALS]
    assert len(ids) == len(set(ids))
