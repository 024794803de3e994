"""``swarmgauge``: dispatches each subcommand to a ``main(argv) -> int``: ``swarmgauge/cli/<subcommand>.py``, or for
``target NAME`` and ``drill NAME`` the target's own command line in ``swarmgauge/targets/``.

Subcommands are imported lazily, so ``swarmgauge target mark`` never imports pandas and ``swarmgauge report``
never imports aioquic.
"""

from __future__ import annotations

import importlib
import sys

# subcommand -> module whose main(argv) handles it; "target NAME" and "drill NAME" add one level.
COMMANDS = {
    "demo": "swarmgauge.cli.demo",
    "report": "swarmgauge.cli.report",
    "compare": "swarmgauge.cli.compare",
    "mark": "swarmgauge.cli.mark",
    "drill": "swarmgauge.targets.mdk.drills",
    "options": "swarmgauge.cli.options",
    "docs": "swarmgauge.cli.docs",
}
TARGETS = {
    "mark": "swarmgauge.targets.mark.cli",
    "mcp": "swarmgauge.targets.mcp_gateway",
    "kneo": "swarmgauge.targets.kneo",
    "postgres": "swarmgauge.targets.postgres",
    "mdk": "swarmgauge.targets.mdk.cli",
    "brain": "swarmgauge.targets.brain",
    "sim-http": "swarmgauge.targets.sim_http",
}

USAGE = (
    "usage: swarmgauge [--version] {demo,report,compare,mark,target,drill,options,docs} ...\n"
    "  swarmgauge demo [PAGE...|--all] the reference pages on embedded targets (default: the quick reads ramp)\n"
    "  swarmgauge report DIR           render report.md / report.html from a run directory\n"
    "  swarmgauge compare BASE NEW     change per step between two runs (or a reference plan); exit 3 on regression\n"
    "  swarmgauge mark VERB URL        a curl for mark:// (FETCH, LIST, VERSIONS, LOOKUP, PUBLISH, ..., raw)\n"
    "  swarmgauge target NAME ...      start an embedded target: " + ", ".join(TARGETS) + "\n"
    "  swarmgauge drill NAME ...       run an MDK failure drill\n"
    "  swarmgauge options LOCUSTFILE   Locust's --help with swarmgauge's options (locust -f F --help lacks them)\n"
    "  swarmgauge docs [--check] DIR   write (or check) the reference in DIR from the code (docs/reference)\n"
    "  swarmgauge --version            the installed version\n"
)


def _run(module_name: str, argv: list[str]) -> int:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            print(f"swarmgauge: {module_name} is not available in this installation", file=sys.stderr)
            return 2
        raise
    return int(module.main(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if args else 2
    if args[0] == "--version":
        import swarmgauge

        print(f"swarmgauge {swarmgauge.__version__}")
        return 0
    command, rest = args[0], args[1:]
    if command == "target":
        if not rest or rest[0] not in TARGETS:
            print(f"swarmgauge target: choose one of {', '.join(TARGETS)}", file=sys.stderr)
            return 2
        return _run(TARGETS[rest[0]], rest[1:])
    if command not in COMMANDS:
        print(f"swarmgauge: unknown command {command!r}\n{USAGE}", file=sys.stderr, end="")
        return 2
    return _run(COMMANDS[command], rest)
