"""Libraries' per-connection INFO lines off unless the user asks for DEBUG (``--loglevel DEBUG``).

aioquic logs two INFO lines per QUIC connection (version, ALPN): 48 in the demo, 136,680 in a 5-minute compose run,
burying swarmgauge's own lines. Their WARNING and ERROR lines still show.
"""

from __future__ import annotations

import logging
from typing import Any

from locust import events
from locust.env import Environment

CHATTY_LOGGERS = (
    "quic",
    "httpx",
    "httpcore",
    "mcp.client.streamable_http",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
)


def quiet_libraries(loglevel: str | None) -> None:
    """WARNING for the chatty libraries' loggers, or their own level back (NOTSET) when DEBUG was asked for."""
    level = logging.NOTSET if str(loglevel or "").upper() == "DEBUG" else logging.WARNING
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(level)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    quiet_libraries(getattr(environment.parsed_options, "loglevel", None))
