"""``python -m swarmgauge.cli``: the ``swarmgauge`` command (how tests and targets start it with this interpreter)."""

import sys

from swarmgauge.cli import main

sys.exit(main())
