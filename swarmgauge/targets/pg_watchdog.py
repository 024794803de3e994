"""``python -m swarmgauge.targets.pg_watchdog ROOT OWNER_PID``: ends a throwaway PostgreSQL cluster when its owner dies.

``pg_ctl start`` detaches the postmaster, so the parent-death signal the other embedded targets get cannot reach it: a
SIGKILLed owner left the cluster running and its temp dir behind. The owner starts this watchdog with that signal
(``launch.die_with_parent``) and also looks every half second whether its owner is still its parent; when either
says the owner is gone it sends the postmaster SIGQUIT (PostgreSQL's immediate shutdown, as
``pg_ctl stop -m immediate``), waits for it to go and removes the dir. The owner's own ``stop`` kills the watchdog
first (SIGKILL, no action) and stops the cluster as before.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

#: how long the postmaster may take to go after SIGQUIT before the dir is removed anyway
SHUTDOWN_S = 10.0
#: how often it looks whether its owner is still its parent (the parent-death signal's fallback)
OWNER_LOOK_S = 0.5


def postmaster_pid(root: Path) -> int | None:
    """The postmaster's pid from the first line of ``data/postmaster.pid``; None when it is not running."""
    try:
        return int((root / "data" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def end_cluster(root: Path) -> None:
    """Immediate shutdown of the cluster under ``root``, then the dir removed."""
    pid = postmaster_pid(root)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGQUIT)
            deadline = time.monotonic() + SHUTDOWN_S
            while time.monotonic() < deadline:
                os.kill(pid, 0)
                time.sleep(0.05)
        except (ProcessLookupError, PermissionError):
            pass
    shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    root, owner = Path(argv[0]), int(argv[1])

    def on_owner_death(*_: object) -> None:
        end_cluster(root)
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_owner_death)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the owner's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked by the owner until the handler was in
    while os.getppid() == owner:  # as long as the owner lives: its stop kills this process first
        time.sleep(OWNER_LOOK_S)
    end_cluster(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
