"""``python -m awa``: the ``awa`` command."""

import sys

from awa.cli import main

sys.exit(main())
