"""``python3 -m targets.kneo prepare`` (stdlib only, before swarmgauge is installed) or ``... serve``."""

import sys

from swarmgauge.targets.kneo import main

sys.exit(main(sys.argv[1:]))
