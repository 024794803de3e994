"""The generator's own series leaves its children out: an embedded target is a child process and is the target."""

from __future__ import annotations

import os
import subprocess
import sys

from swarmgauge.listeners.sources.proc import PsutilSource


def _processes(source: PsutilSource) -> int:
    return int(next(r.value for r in source.sample() if r.metric == "processes"))


def test_the_generator_source_counts_only_its_own_process():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert _processes(PsutilSource(pid=os.getpid())) >= 2  # a target's tree: children summed in
        assert _processes(PsutilSource(pid=os.getpid(), children=False)) == 1  # the generator alone
    finally:
        child.kill()
        child.wait(10)
