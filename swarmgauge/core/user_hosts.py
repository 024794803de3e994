"""Which User classes need a ``--host``: the headless start-up check and the web form's START ask the same question."""

from __future__ import annotations

from typing import Any

from locust import FastHttpUser, HttpUser

#: What Locust's own HTTP users need in ``--host``.
HTTP_URL = "http(s)://HOST:PORT"


def host_needed(user_class: Any) -> str | None:
    """The URL a User class needs in ``--host`` (its ``needs_host``, or http(s) for Locust's HTTP users), or None
    when it needs none or sets its own ``host``."""
    if getattr(user_class, "host", None):
        return None
    needs = getattr(user_class, "needs_host", None)
    if isinstance(needs, str):
        return needs
    return HTTP_URL if isinstance(user_class, type) and issubclass(user_class, (HttpUser, FastHttpUser)) else None


def missing_host(user_classes: Any, host: str | None) -> str | None:
    """The one-line refusal when ``host`` is empty and a class in ``user_classes`` needs one, else None."""
    if host:
        return None
    missing = [(cls.__name__, needs) for cls in user_classes or [] if (needs := host_needed(cls))]
    if not missing:
        return None
    names = ", ".join(name for name, _ in missing)
    first = missing[0][0]
    return (
        f"{names} {'needs' if len(missing) == 1 else 'need'} --host {missing[0][1]}; give --host, "
        f"or set host on {first if len(missing) == 1 else 'each class'}"
    )
