"""Secrets kept out of everything a run writes or shows: every listener redacts, so it is not ``rundir.py``'s alone."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from locust.env import Environment

from swarmgauge.core import hooks, run_context
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.redaction import known_secrets

# Filled from the parser: every option declared with is_secret=True, by dest name. Names that look like secrets
# are redacted too, in case a plugin forgot the flag.
SECRET_OPTION_NAMES: set[str] = set()
_SECRET_LOOKING = re.compile(r"(token|password|passwd|secret|api[_-]?key|credential)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)(?P<password>[^@\s/]+)(?P<at>@)")
_KEY_VALUE_PASSWORD = re.compile(r"(?P<key>\b(?:password|passwd|token|secret)\s*=\s*)(?P<value>[^\s&;\"',]+)", re.I)
REDACTED = "***"

_parser_ref: list[Any] = []
#: how many of the parser's actions :func:`secret_option_names` has read (a plugin may add options later)
_actions_read: list[int] = [0]


def keep_parser(parser: Any) -> None:
    """The parser :func:`secret_option_names` reads the declared secrets from (``rundir``'s options hand it over)."""
    _parser_ref[:] = [parser]
    _actions_read[0] = 0


def secret_option_names() -> set[str]:
    """Option dests declared secret, read from the parser once every listener has added its options; only actions
    added since the last call are read (it is asked for every option name of every string a run redacts)."""
    for parser in _parser_ref:
        actions = getattr(parser, "_actions", [])
        for action in actions[_actions_read[0] :]:
            if getattr(action, "is_secret", False):
                SECRET_OPTION_NAMES.add(action.dest)
        _actions_read[0] = len(actions)
    return SECRET_OPTION_NAMES


def _is_secret_name(name: str) -> bool:
    return name in secret_option_names() or bool(_SECRET_LOOKING.search(name))


def is_secret_name(name: str) -> bool:
    """An option declared secret, or named like one (token, password, ...): its value is never written out."""
    return _is_secret_name(name)


_secret_values: list[str] = []


def _known_secret_values(environment: Environment | None = None) -> list[str]:
    values = set(_secret_values) | set(known_secrets())
    options = getattr(environment, "parsed_options", None) if environment is not None else None
    if options is not None:
        for name, value in vars(options).items():
            if _is_secret_name(name) and isinstance(value, str) and len(value) >= 3:
                values.add(value)
    return sorted(values, key=len, reverse=True)


def redact(text: str, environment: Environment | None = None) -> str:
    """Hide secret option values, URL passwords and ``password=...`` pairs in ``text``."""
    return _scrubber(environment)(text)


def _scrubber(environment: Environment | None) -> Callable[[str], str]:
    """:func:`redact` for many strings: the secret values looked up once. A run's checkpoint redacts every string
    of ``run.json``; looking them up per string held the event loop 135-290 ms of CPU at each step's checkpoint."""
    values = _known_secret_values(environment if environment is not None else _current_env())

    def scrub(text: str) -> str:
        for value in values:
            text = text.replace(value, REDACTED)
        text = _URL_PASSWORD.sub(lambda m: m.group("scheme") + REDACTED + m.group("at"), text)
        return _KEY_VALUE_PASSWORD.sub(lambda m: m.group("key") + REDACTED, text)

    return scrub


def redacted_options(environment: Environment) -> dict[str, Any]:
    """The parsed options as JSON-able values, secrets replaced by ``***``."""
    options = getattr(environment, "parsed_options", None)
    result: dict[str, Any] = {}
    scrub = _scrubber(environment)
    for name, value in sorted(vars(options).items() if options is not None else []):
        if _is_secret_name(name):
            result[name] = REDACTED if value not in (None, "", False) else value
            continue
        value = value if isinstance(value, (int, float, bool, type(None))) else _jsonable(value)
        result[name] = json.loads(scrub(json.dumps(value)))
    return result


def _jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    return str(value)


@dataclass
class _Initialised(PerEnvironment):
    """Owned by ``listeners/run_redaction.py`` (``rundir``'s init notes it): when Locust's ``init`` reached this
    Environment (its order among those alive)."""

    order: int = 0


_inits = itertools.count(1)


def note_initialised(environment: Environment) -> None:
    """Locust's ``init`` reached ``environment``: its place among the Environments alive (``rundir``'s init)."""
    _Initialised.of(environment).order = next(_inits)


def initialised() -> list[Any]:
    """The Environments ``init`` reached that are still alive, oldest first (a gone one has no record left)."""
    found = [(record.order, env) for env in run_context.environments() if (record := _Initialised.peek(env))]
    return [env for _order, env in sorted(found, key=lambda pair: pair[0])]


def _current_env() -> Any:
    """The Environment last initialised and still alive (``redact`` called without one), or None."""
    alive = initialised()
    return alive[-1] if alive else None


def redact_argv(argv: list[str]) -> list[str]:
    """``argv`` with the value of every secret option replaced by ``***`` (``--x=v`` and ``--x v``)."""
    result, hide_next = [], False
    for arg in argv:
        if hide_next:
            result.append(REDACTED)
            hide_next = False
            continue
        name = arg.lstrip("-").split("=", 1)[0].replace("-", "_")
        if arg.startswith("--") and _is_secret_name(name):
            if "=" in arg:
                result.append(arg.split("=", 1)[0] + "=" + REDACTED)
            else:
                result.append(arg)
                hide_next = True
            continue
        result.append(arg)
    return result


def redact_tree(value: Any, environment: Environment | None = None) -> Any:
    """:func:`redact` applied to every string inside a JSON-able value, so the JSON around them stays intact."""
    return _scrub_tree(value, _scrubber(environment))


def _scrub_tree(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {key: _scrub_tree(item, scrub) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_tree(item, scrub) for item in value]
    return value


hooks.redact.implement(redact)
