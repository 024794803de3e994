"""Every QUIC and Mark client test runs once per QUIC engine (qh3 and aioquic)."""

from __future__ import annotations

import pytest

from swarmgauge.quic.engine import ENGINES


@pytest.fixture(scope="module", params=ENGINES)
def quic_engine(request: pytest.FixtureRequest) -> str:
    """The engine name under test: passed to the client, the in-memory pair and the misbehaving server."""
    return str(request.param)
