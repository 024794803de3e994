"""Entry point of one stand-in component process: ``python -m targets.mdk.process ROLE --root DIR``.

Each process watches the stack owner's pid (``<root>/owner.pid``) and exits when the owner is gone, so a crashed
launcher or test never leaves the stand-in running.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

OWNER_CHECK_S = 1.0


def _owner_alive(root: Path) -> bool:
    try:
        pid = int((root / "owner.pid").read_text())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _watch_owner(root: Path) -> None:
    while _owner_alive(root):
        await asyncio.sleep(OWNER_CHECK_S)


async def _main(role: str, root: Path, boot_s: float = 0.0) -> None:
    if boot_s > 0:
        # a restarted Kernel or Worker is a Node.js process that loads its runtime and store before it listens
        await asyncio.sleep(boot_s)
    if role == "mocks":
        from swarmgauge.targets.mdk import mock

        component = mock.run(root)
    elif role == "kernel":
        from swarmgauge.targets.mdk import kernel

        component = kernel.run(root)
    elif role == "gateway":
        from swarmgauge.targets.mdk import gateway

        component = gateway.run(root)
    elif role.startswith("worker-"):
        from swarmgauge.targets.mdk import worker

        component = worker.run(root, role)
    else:
        raise SystemExit(f"unknown stand-in role {role!r}")
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: os._exit(0))
    done, pending = await asyncio.wait(
        [asyncio.ensure_future(component), asyncio.ensure_future(_watch_owner(root))],
        return_when=asyncio.FIRST_COMPLETED,
    )
    for task in done:
        task.result()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="swarmgauge.targets.mdk.process", description="One MDK stand-in component.")
    parser.add_argument("role", help="mocks, kernel, gateway or worker-N")
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--boot-s", type=float, default=0.0, help="wait this long before starting (a modelled boot)")
    args = parser.parse_args(argv)
    asyncio.run(_main(args.role, args.root, args.boot_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
