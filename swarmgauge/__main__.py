"""``python -m swarmgauge``: the ``swarmgauge`` command, for an environment whose scripts folder is not on PATH."""

import sys

from swarmgauge.cli import main

sys.exit(main())
