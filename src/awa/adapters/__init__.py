"""Store adapters: ``memory`` (reference, ships for your tests), ``postgres`` and ``sqlite``,
opened by URL with ``open_store``; ``StoreCore`` is what an adapter builds on
(``docs/store-adapters.md``)."""

from awa.adapters._fencing import Locked, Writes
from awa.adapters._unreadable import Decoders, Raw, TooEarly, TooLate, read_fields, read_job
from awa.adapters.core import StoreCore, Transaction, UniqueKeyRace
from awa.adapters.registry import open_store, register_scheme

__all__ = [
    "Decoders",
    "Locked",
    "Raw",
    "StoreCore",
    "TooEarly",
    "TooLate",
    "Transaction",
    "UniqueKeyRace",
    "Writes",
    "open_store",
    "read_fields",
    "read_job",
    "register_scheme",
]
