"""A Kernel or Worker restarted by a drill boots for the stand-in's ``--restart-boot-s`` before it listens, as the
real Node.js processes do, so the drill's READY and first read come after that boot; a first start never waits."""

from __future__ import annotations

import pytest

from swarmgauge.targets.mdk.drills import run_drill
from swarmgauge.targets.mdk.stack import MDKStack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
BOOT_S = 2.0


@pytest.mark.parametrize("name", ["worker-restart", "kernel-restart"])
def test_a_restart_drill_sees_ready_and_the_first_read_only_after_the_modelled_boot(tmp_path, name):
    with MDKStack(root=tmp_path / "stack", devices=4, workers=1, restart_boot_s=BOOT_S) as stack:
        result = run_drill(name, stack, timeout_s=60)
    assert result.recovered, result.note
    assert result.ready_s is not None and result.first_read_s is not None
    assert result.ready_s >= BOOT_S and result.first_read_s >= result.ready_s
    assert result.as_dict()["boot_s"] == BOOT_S  # the index names the boot that set READY and the first read


def test_the_boot_applies_to_restarts_only_not_to_the_first_start(tmp_path):
    with MDKStack(root=tmp_path / "stack", devices=2, workers=1, restart_boot_s=60.0, start_timeout_s=30.0) as stack:
        assert stack.kernel_status()["workers"][0]["routable"]  # started within 30 s although a restart boots 60 s
