"""Secret values known to this process, and their redaction from any text: failure messages, logs, result files.

Locust-free and I/O-free, so the one place that fires request events (``users/recording.py``) and every writer of
result files share one list. A value is registered once it is known: secret options at ``init`` (and again when a
worker receives the master's options), tokens inside an embedded target's argument string when they are parsed.
"""

from __future__ import annotations

import re

REDACTED = "***"
MIN_SECRET_LENGTH = 3  # shorter values would redact ordinary text ("a", "10")
SECRET_NAME = re.compile(r"(token|password|passwd|secret|api[_-]?key|credential)", re.IGNORECASE)

_known: set[str] = set()
_ordered: list[str] = []


def register_secret(value: object) -> None:
    """Remember a secret value so :func:`redact_known` hides it everywhere from now on."""
    if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH and value not in _known:
        _known.add(value)
        _ordered[:] = sorted(_known, key=len, reverse=True)  # longest first: a token containing another


def known_secrets() -> list[str]:
    return list(_ordered)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` (longest first, as :func:`known_secrets` gives them) replaced by ``***``."""
    for value in secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_known(text: str) -> str:
    """``text`` with every registered secret value replaced by ``***``."""
    return redact(text, _ordered)


def contains_secret(text: str) -> bool:
    return any(value in text for value in _ordered)


def register_secret_options(options: object) -> None:
    """Register the values of options whose names say they are secret (``--mark-token``, ``--mcp-token``...)."""
    for name, value in vars(options).items() if options is not None and hasattr(options, "__dict__") else []:
        if SECRET_NAME.search(name):
            register_secret(value)


def register_flag_values(args: list[str], flags: tuple[str, ...]) -> None:
    """Register the value after each of ``flags`` (``--publish-token X`` or ``--publish-token=X``) in ``args``."""
    for position, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if flag in flags and equals:
            register_secret(value)
        elif arg in flags and position + 1 < len(args):
            register_secret(args[position + 1])
