"""Loaded by kneo-serv's own interpreter (``PYTHONPATH``) when a run should wait like a model provider.

The page's harness has ``--agent-delay`` (simulated provider latency per run); the real kneo-serv's echo agent
(``DummyImpl``) answers at once. With ``SWARMGAUGE_KNEO_PROVIDER_DELAY_S`` set, each of its completions first waits
that long (``asyncio.sleep``: the wait holds no CPU, as a provider's network round trip). Stdlib only: it runs inside
the kneo-serv venv, not swarmgauge's.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import os

DELAY_VARIABLE = "SWARMGAUGE_KNEO_PROVIDER_DELAY_S"


def _install(delay_s: float) -> None:
    dummy = importlib.import_module("kneo_serv.runtime.bridge.impl.dummy_impl").DummyImpl
    complete = dummy.complete

    @functools.wraps(complete)
    async def delayed_complete(self, messages, config):
        await asyncio.sleep(delay_s)
        return await complete(self, messages, config)

    dummy.complete = delayed_complete


_delay = float(os.environ.get(DELAY_VARIABLE) or 0.0)
if _delay > 0:
    _install(_delay)
