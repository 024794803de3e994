"""``swarmgauge options LOCUSTFILE``: Locust's ``--help`` with the options that locustfile and swarmgauge add.

``locust -f FILE --help`` prints its help before it imports FILE (``parse_locustfile_option`` in Locust's
``argument_parser``), so every option declared in an ``init_command_line_parser`` listener - all of swarmgauge's,
and a locustfile's own - is missing from it. This imports the locustfile first, as Locust does for a run, and then
prints the help of the very parser a run would use, each swarmgauge option with its two environment variables, and
the one precedence rule they follow (:data:`swarmgauge.core.options.PRECEDENCE`).
"""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = "usage: swarmgauge options LOCUSTFILE   (Locust's --help with the locustfile's and swarmgauge's options)\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.stderr.write(USAGE)
        return 2
    path = Path(argv[0])
    if not path.is_file():
        print(f"swarmgauge options: no locustfile at {path}", file=sys.stderr)
        return 2
    from locust.argument_parser import get_parser
    from locust.util.load_locustfile import load_locustfile

    from swarmgauge.core.options import PRECEDENCE

    load_locustfile(str(path))
    get_parser().print_help()
    print(f"\nswarmgauge options: {PRECEDENCE}.")
    return 0
