"""Embedded reference targets for the default run, the tests and calibration.

Each target's command line is registered here (:data:`swarmgauge.core.option_kinds.TARGET_PARSERS`), imported
lazily, so ``--<target>-embedded-args`` are parsed by the target's own parser at ``init``, before the load, in any
process that imported a target module (every locustfile that can start one).
"""

from __future__ import annotations

import argparse

from swarmgauge.core import option_kinds


def _mark_parser() -> argparse.ArgumentParser:
    from swarmgauge.targets.mark.cli import build_parser

    return build_parser()


def _brain_parser() -> argparse.ArgumentParser:
    from swarmgauge.targets.brain import build_parser

    return build_parser()


def _mdk_parser() -> argparse.ArgumentParser:
    from swarmgauge.targets.mdk.cli import build_parser

    return build_parser()


def _mcp_parser() -> argparse.ArgumentParser:
    from swarmgauge.targets.mcp_gateway import build_parser

    return build_parser()


# ``--<target>-embedded-args`` are checked at init by each target's own parser (option_kinds.embedded_args)
option_kinds.TARGET_PARSERS.update(mark=_mark_parser, brain=_brain_parser, mdk=_mdk_parser, mcp=_mcp_parser)
