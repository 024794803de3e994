"""The CGMiner text API (as Avalon miners and their mocks speak it): requests and replies as bytes, no I/O.

A request is one plain word (``summary``) or a word and a parameter string (``ascset|0,workmode,1``); one request
per TCP connection. A reply is ``|``-separated sections of ``,``-separated ``key=value`` pairs, the first being
``STATUS`` (``S``/``I`` success or info, ``W`` warning, ``E``/``F`` error), sometimes ended by a NUL byte. Both the
MDK stand-in's mock devices and its Worker driver use this module, so the wire format lives in one tested place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from swarmgauge.errors import SwarmgaugeError

MAX_REQUEST_BYTES = 8192
_COMMAND = re.compile(r"^[a-z][a-z0-9_+-]{0,63}$")
_SECTION_NAME = re.compile(r"^[A-Z][A-Z0-9]*$")
OK_STATUSES = ("S", "I")
STATUS_WORDS = ("S", "I", "W", "E", "F")


class CGMinerError(SwarmgaugeError):
    """Malformed CGMiner request or reply bytes."""


class CGMinerStatusError(CGMinerError):
    """The device answered with an error STATUS (``E`` or ``F``)."""

    def __init__(self, status: str, code: int, msg: str) -> None:
        super().__init__(f"STATUS={status} Code={code} {msg}")
        self.status, self.code, self.msg = status, code, msg


@dataclass(frozen=True)
class Request:
    """One decoded request: the command word and its optional parameter string."""

    command: str
    parameter: str | None = None

    @property
    def args(self) -> list[str]:
        return self.parameter.split(",") if self.parameter else []


@dataclass
class Reply:
    """One decoded reply: the STATUS section's fields and the named data sections after it."""

    status: str
    code: int
    msg: str
    description: str = ""
    when: int = 0
    sections: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES

    def section(self, name: str) -> dict[str, str]:
        """The first section called ``name`` (case-insensitive); ``CGMinerError`` when it is missing."""
        for section_name, values in self.sections:
            if section_name.upper() == name.upper():
                return values
        raise CGMinerError(f"reply has no {name} section")

    def raise_for_status(self) -> Reply:
        if not self.ok:
            raise CGMinerStatusError(self.status, self.code, self.msg)
        return self


def encode_request(command: str, parameter: str | None = None) -> bytes:
    if not _COMMAND.match(command):
        raise CGMinerError(f"bad command word {command!r}")
    if parameter is not None and ("|" in parameter or "\n" in parameter):
        raise CGMinerError("a parameter may not contain '|' or a newline")
    text = command if parameter is None else f"{command}|{parameter}"
    return text.encode("ascii")


def decode_request(data: bytes) -> Request:
    """Decode what a client sent; garbled input raises ``CGMinerError`` (a device sends no reply to it)."""
    if len(data) > MAX_REQUEST_BYTES:
        raise CGMinerError("request too long")
    try:
        text = data.rstrip(b"\x00\r\n ").decode("ascii")
    except UnicodeDecodeError as exc:
        raise CGMinerError("request is not ASCII") from exc
    command, sep, parameter = text.partition("|")
    if not _COMMAND.match(command):
        raise CGMinerError(f"bad command word {command!r}")
    return Request(command, parameter if sep else None)


def _escape(value: object) -> str:
    text = str(value)
    if any(ch in text for ch in ",|=\x00"):
        raise CGMinerError(f"value {text!r} contains a separator")
    return text


def encode_reply(reply: Reply) -> bytes:
    status = {
        "STATUS": reply.status,
        "When": reply.when,
        "Code": reply.code,
        "Msg": reply.msg,
        "Description": reply.description,
    }
    parts = [("STATUS", status)] + [(name, values) for name, values in reply.sections]
    chunks = []
    for name, values in parts:
        fields = [f"{_escape(k)}={_escape(v)}" for k, v in values.items()]
        if name != "STATUS":
            fields.insert(0, _escape(name))
        chunks.append(",".join(fields))
    return ("|".join(chunks) + "|").encode("ascii") + b"\x00"


def _split_fields(chunk: str) -> list[tuple[str, str | None]]:
    pairs = []
    for item in chunk.split(","):
        key, sep, value = item.partition("=")
        pairs.append((key, value if sep else None))
    return pairs


def decode_reply(data: bytes) -> Reply:
    """Decode a device's reply; anything that is not a STATUS-led section list raises ``CGMinerError``."""
    if not data:
        raise CGMinerError("empty reply (a device answers a garbled command with nothing)")
    try:
        text = data.rstrip(b"\x00\r\n").decode("ascii")
    except UnicodeDecodeError as exc:
        raise CGMinerError("reply is not ASCII") from exc
    chunks = [chunk for chunk in text.split("|") if chunk]
    if not chunks:
        raise CGMinerError("reply has no sections")
    status_pairs = dict(_split_fields(chunks[0]))
    status = status_pairs.get("STATUS")
    if status not in STATUS_WORDS:
        raise CGMinerError(f"reply does not start with a STATUS section: {chunks[0][:60]!r}")
    try:
        code = int(status_pairs.get("Code") or 0)
        when = int(status_pairs.get("When") or 0)
    except ValueError as exc:
        raise CGMinerError("STATUS Code/When is not a number") from exc
    sections: list[tuple[str, dict[str, str]]] = []
    for chunk in chunks[1:]:
        pairs = _split_fields(chunk)
        first_key, first_value = pairs[0]
        name = first_key if first_value is None or _SECTION_NAME.match(first_key) else ""
        body = pairs[1:] if first_value is None else pairs
        values = {}
        for key, value in body:
            if value is None:
                raise CGMinerError(f"field {key!r} in section {name or '?'} has no '='")
            values[key] = value
        sections.append((name, values))
    return Reply(
        status=status,
        code=code,
        msg=status_pairs.get("Msg") or "",
        description=status_pairs.get("Description") or "",
        when=when,
        sections=sections,
    )


def number(values: dict[str, str], key: str) -> float:
    """A numeric field of a section; ``CGMinerError`` when it is missing or not a number."""
    try:
        return float(values[key])
    except KeyError as exc:
        raise CGMinerError(f"field {key!r} missing") from exc
    except ValueError as exc:
        raise CGMinerError(f"field {key!r} is not a number: {values[key]!r}") from exc
