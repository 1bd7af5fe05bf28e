import sys

from awa.testing.simulation.cli import main

sys.exit(main())
