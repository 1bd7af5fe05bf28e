"""``UNCHANGED``: a setting ``configure_queue`` is not given, told apart from ``None``.

The retentions and DLQ routing read ``None`` as "leave it as it is" (they were first); a flow
limit reads ``None`` as "remove it", as the limit's own absence. Its default is therefore
``UNCHANGED``, a value no caller passes by accident.
"""

from __future__ import annotations

import enum
from typing import Literal, TypeAlias

__all__ = ["UNCHANGED", "Unchanged"]


class _Unchanged(enum.Enum):
    UNCHANGED = "unchanged"

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = _Unchanged.UNCHANGED
#: the type of ``UNCHANGED`` (a one-member enum, so ``is UNCHANGED`` narrows it away)
Unchanged: TypeAlias = Literal[_Unchanged.UNCHANGED]
