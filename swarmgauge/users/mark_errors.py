"""The Mark Protocol's errors: one named class per status, so a failure table says what the server answered.

Kept apart from ``MarkClient`` (the I/O) so a locustfile can catch ``Conflict`` or ``NotFound`` by name.
"""

from __future__ import annotations

from swarmgauge.core.failure_names import bounded_reason
from swarmgauge.errors import SwarmgaugeError
from swarmgauge.protocols.mark import SUCCESS_STATUSES, Response


class MarkError(SwarmgaugeError):
    """A failure at the Mark Protocol level (above QUIC)."""


class MarkMalformedResponse(MarkError):
    """The server's bytes are not a Mark response; ``reason`` says why (from ``MarkParseError``)."""

    def __init__(self, reason: str):
        kind, quoted, detail = reason.partition(": ")  # "invalid metadata: <the parser's words on the server's bytes>"
        super().__init__(f"malformed response: {kind}{quoted}{bounded_reason(detail) if quoted else ''}")
        self.reason = reason


class IncompleteListing(MarkError):
    """``list_all`` stopped: too many pages, or the server handed back a cursor it had already given."""


class MarkStatusError(MarkError):
    """A status other than ok / created / not-modified; ``status``, the body's first line (``message``) and the whole
    ``response`` are kept, and the text (what Locust groups failures by) is the status alone, never the body."""

    def __init__(self, response: Response):
        self.status = response.status
        self.response = response
        self.message = _error_message(response.body)
        super().__init__(self.status if self.status in STATUS_ERRORS else bounded_reason(self.status))


class NotFound(MarkStatusError):
    """``not-found``."""


class Archived(MarkStatusError):
    """``archived``."""


class MarkUnauthorized(MarkStatusError):
    """``unauthorized``: a missing, unknown or expired token."""


class NotPermitted(MarkStatusError):
    """``not-permitted``: a valid token without the operation or path, or a server that refuses writes."""


class Conflict(MarkStatusError):
    """``conflict``: ``server_version`` and ``your_version`` are the versions the server reported."""

    def __init__(self, response: Response):
        super().__init__(response)
        self.server_version = _int_or_none(response.metadata.get("server-version"))
        self.your_version = _int_or_none(response.metadata.get("your-version"))


class BadRequest(MarkStatusError):
    """``bad-request``."""


class ServerError(MarkStatusError):
    """``server-error``."""


class MarkRateLimited(MarkStatusError):
    """``rate-limited``."""


STATUS_ERRORS: dict[str, type[MarkStatusError]] = {
    "not-found": NotFound,
    "archived": Archived,
    "unauthorized": MarkUnauthorized,
    "not-permitted": NotPermitted,
    "conflict": Conflict,
    "bad-request": BadRequest,
    "server-error": ServerError,
    "rate-limited": MarkRateLimited,
}


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _error_message(body: bytes) -> str:
    """The first line after an error body's ``# Title``, short, for failure tables."""
    for line in body.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line[:200]
    return ""


def raise_for_status(response: Response) -> Response:
    """Return ``response`` if its status is a success, else raise its named ``MarkStatusError``."""
    if response.status in SUCCESS_STATUSES:
        return response
    raise STATUS_ERRORS.get(response.status, MarkStatusError)(response)
