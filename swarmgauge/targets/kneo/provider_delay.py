"""The page's simulated provider latency for the real kneo-serv: the environment that makes each run wait.

kneo-serv's echo agent has no delay knob, so ``provider_delay_site/sitecustomize.py`` is put on its interpreter's
``PYTHONPATH``; it wraps the echo agent's completion in a wait of ``seconds``. Stdlib only.
"""

from __future__ import annotations

import os
from pathlib import Path

from swarmgauge.errors import UsageError

SITE_DIR = Path(__file__).resolve().parent / "provider_delay_site"
DELAY_VARIABLE = "SWARMGAUGE_KNEO_PROVIDER_DELAY_S"


def provider_delay_env(seconds: float) -> dict[str, str]:
    """The extra environment of a kneo-serv whose every run waits ``seconds`` for its "provider" (none for 0)."""
    if seconds < 0:
        raise UsageError(f"--kneo-embedded-provider-delay must be 0 or more seconds, not {seconds:g}")
    if seconds == 0:
        return {}
    path = os.pathsep.join(filter(None, [str(SITE_DIR), os.environ.get("PYTHONPATH", "")]))
    return {"PYTHONPATH": path, DELAY_VARIABLE: f"{seconds:g}"}
