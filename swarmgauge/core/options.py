"""One way to declare a swarmgauge option, so each is settable the ways a Locust user sets options.

Every option declared with :func:`add_option` reads, from highest to lowest precedence:

1. the command line (``--slo ...``);
2. the environment: ``LOCUST_SLO`` (Locust's own convention) or ``SWARMGAUGE_SLO`` (kept: compose files use it).
   Both set to different values is refused (exit 2, one line): nothing decides silently which one was meant;
3. a config file: ``locust.conf``, ``~/.locust.conf``, ``pyproject.toml``'s ``[tool.locust]`` or ``--config``;
4. the default.

In the web UI the form starts from that value, and what is submitted at START wins for that run.

Locust's parser (configargparse) reads one environment variable per option, at parse time; the name it reads is
chosen here, at declaration, from what the environment holds. :data:`DECLARED` keeps every declared flag with its
two names, so ``swarmgauge options`` and the reference can name them.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PRECEDENCE = (
    "precedence: the command line, then LOCUST_<OPTION> or SWARMGAUGE_<OPTION> (both set and different is refused), "
    "then a config file (locust.conf, ~/.locust.conf, pyproject.toml [tool.locust], --config), then the default; "
    "the web UI form starts from that value and what START submits wins for that run"
)


@dataclass(frozen=True)
class OptionEnv:
    """The two environment variables that set one option."""

    flag: str
    locust: str
    swarmgauge: str


@dataclass(frozen=True)
class DeclaredOption(OptionEnv):
    """One declared option as the reference shows it: its two variables, default, help and declaring module."""

    help: str = ""
    default: Any = None
    choices: tuple[Any, ...] | None = None
    module: str = ""
    secret: bool = False


#: Every option declared through :func:`add_option`, by flag (``swarmgauge options`` and ``docs/reference`` read it).
DECLARED: dict[str, DeclaredOption] = {}

#: argparse's default for an action given no ``default=``.
ACTION_DEFAULTS = {"store_true": False, "store_false": True}


def env_names(flag: str) -> OptionEnv:
    """``--mark-ca`` -> ``LOCUST_MARK_CA`` and ``SWARMGAUGE_MARK_CA``."""
    stem = flag.lstrip("-").upper().replace("-", "_")
    return OptionEnv(flag=flag, locust=f"LOCUST_{stem}", swarmgauge=f"SWARMGAUGE_{stem}")


def env_conflict(names: OptionEnv, environ: Mapping[str, str]) -> str | None:
    """The one-line refusal when both variables are set to different values, else None."""
    if names.locust in environ and names.swarmgauge in environ and environ[names.locust] != environ[names.swarmgauge]:
        return (
            f"{names.locust} and {names.swarmgauge} are both set, to different values, for {names.flag}: "
            "unset one of them"
        )
    return None


def chosen_env_var(names: OptionEnv, environ: Mapping[str, str]) -> str:
    """The variable the parser reads: ``SWARMGAUGE_*`` only where it alone is set, else Locust's name."""
    if names.swarmgauge in environ and names.locust not in environ:
        return names.swarmgauge
    return names.locust


def _caller_module() -> str:
    """The module whose code called :func:`add_option` (a listener's, a User's): the reference groups by it."""
    frame = inspect.currentframe()
    caller = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
    return str(caller.f_globals.get("__name__", "")) if caller is not None else ""


def add_option(parser: Any, flag: str, *, help: str, environ: Mapping[str, str] | None = None, **kwargs: Any) -> None:
    """Declare ``flag`` on Locust's parser, settable by both environment variables (see the module docstring).

    A conflict between the two variables stops the process here, before anything runs: one line, exit 2.
    """
    env = os.environ if environ is None else environ
    names = env_names(flag)
    conflict = env_conflict(names, env)
    if conflict:
        sys.stderr.write(f"swarmgauge: {conflict}\n")
        sys.exit(2)
    action = kwargs.get("action")
    choices = kwargs.get("choices")
    DECLARED[flag] = DeclaredOption(
        flag=flag,
        locust=names.locust,
        swarmgauge=names.swarmgauge,
        help=help,
        default=kwargs.get("default", ACTION_DEFAULTS.get(action) if isinstance(action, str) else None),
        choices=tuple(choices) if choices is not None else None,
        module=_caller_module(),
        secret=bool(kwargs.get("is_secret", False)),
    )
    text = f"{help} [env {names.locust} or {names.swarmgauge}]"
    parser.add_argument(flag, env_var=chosen_env_var(names, env), help=text, **kwargs)
