"""The headless command line that repeats a web UI run: what was typed into the form, not how the UI was launched.

A UI run's ``argv`` is ``locust -f FILE`` and little else; its users, steps and SLOs were typed into the form, so its
report could not be repeated. :func:`repeat_command` writes them as options: ``locust -f FILE --headless --host H``,
then the users (``-u N -r R -t T``, or for a form-driven run whose count was edited the counts as held,
``--steps 2,6,10 --step-time T`` with T the longest hold), then every form option that differs from its default
(``--steps``, ``--step-time``, ``--slo``, ...), secrets as ``***``. An embedded target's host and the options it set
at start-up are left out: the locustfile starts its target again. run.json keeps it as ``repeat_command``.
"""

from __future__ import annotations

import argparse
import math
import shlex
from typing import Any

from locust.env import Environment

from swarmgauge.listeners.run_redaction import REDACTED, is_secret_name, redact
from swarmgauge.listeners.rundir import run_info
from swarmgauge.listeners.webui_form import set_at_start_up, web_options

LOCUST_RUN_OPTIONS = (("stop_timeout", "--stop-timeout"),)
FORM_PLAN_DESTS = ("steps", "step_time")


def _embedded(environment: Environment, host: str) -> bool:
    """The host is a target the locustfile started itself (on a new port each time): the repeat starts it again."""
    targets = run_info(environment).get("embedded_targets") or {}
    return isinstance(targets, dict) and any(isinstance(t, dict) and t.get("url") == host for t in targets.values())


def _seconds(value: float) -> str:
    return f"{max(1, math.ceil(value))}s"


def _option_words(action: argparse.Action, value: Any, environment: Environment) -> list[str]:
    """``--flag value`` as a person would type it (repeated for an appending option); [] for the default."""
    if value is None or value == action.default or value == "" or value == []:
        return []
    flag = next((f for f in action.option_strings if f.startswith("--")), action.option_strings[0])
    if action.nargs == 0:
        return [flag] if bool(value) != bool(action.default) else []
    if getattr(action, "is_secret", False) or is_secret_name(action.dest):
        return [flag, REDACTED]
    items = value if isinstance(value, (list, tuple)) else [value]
    texts = [redact(str(item), environment) for item in items]
    if isinstance(action, argparse._AppendAction):
        return [word for text in texts for word in (flag, text)]
    if action.nargs in ("*", "+"):
        return [flag, *texts]
    return [flag, ",".join(texts)]


def _form_options(environment: Environment, skip: tuple[str, ...]) -> list[str]:
    """Every form option away from its default; not one code set at start-up (an embedded target sets it again)."""
    parsed = environment.parsed_options
    options = web_options()
    code_set = set_at_start_up(environment, options)
    words: list[str] = []
    for dest, action in sorted(options.items()):
        if dest in skip or dest in code_set:
            continue
        words += _option_words(action, getattr(parsed, dest, None), environment)
    return words


def _users(options: Any, held: list[tuple[int, float]] | None) -> list[str]:
    """The users part: ``-u/-r/-t`` for one count (``-t`` as long as it was held), ``--steps ... --step-time ...``
    for the counts an EDIT set (each held at least as long as the longest was)."""
    spawn_rate = getattr(options, "spawn_rate", None) or 1
    if held and len(held) > 1:
        longest = max(seconds for _, seconds in held)
        return ["--steps", ",".join(str(users) for users, _ in held), "--step-time", _seconds(longest)]
    users = held[0][0] if held else getattr(options, "num_users", None) or 1
    run_time = held[0][1] if held else getattr(options, "run_time", None)
    return ["-u", str(users), "-r", f"{float(spawn_rate):g}"] + (["-t", _seconds(float(run_time))] if run_time else [])


def repeat_command(
    environment: Environment,
    *,
    held: list[tuple[int, float]] | None,
    plan_in_effect: bool,
) -> str:
    """The headless command line for this UI run. ``held`` is the (users, seconds) of each count a form-driven run
    held; with a plan in effect the plan options say the users and ``-t`` only bounds the run."""
    options = environment.parsed_options
    locustfile = getattr(options, "locustfile", None) or "locustfile.py"
    words = ["locust", "-f", str(locustfile), "--headless"]
    if environment.host and not _embedded(environment, environment.host):
        words += ["--host", redact(environment.host, environment)]
    if plan_in_effect:
        run_time = getattr(options, "run_time", None)
        words += ["-t", _seconds(float(run_time))] if run_time else []
        words += _form_options(environment, ())
    else:
        words += _users(options, held)
        words += _form_options(environment, FORM_PLAN_DESTS)
    for dest, flag in LOCUST_RUN_OPTIONS:
        value = getattr(options, dest, None)
        if value:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    selected = list(getattr(options, "user_classes", None) or [])
    return shlex.join(words + selected)
