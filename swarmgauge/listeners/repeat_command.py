"""The headless command line that repeats a web UI run: what was typed into the form, not how the UI was launched.

A UI run's ``argv`` is ``locust -f FILE`` and little else; its users, steps and SLOs were typed into the form, so its
report could not be repeated. :func:`repeat_command` writes them as options: ``locust -f FILE --headless --host H``,
then the users (``-u N -r R -t T``, or for a form-driven run whose count was edited the counts as held,
``--steps 2,6,10 --step-time T`` with T the longest hold), then every form option that differs from its default
(``--steps``, ``--step-time``, ``--slo``, ...), secrets as ``***``. An embedded target's host and the options it set
at start-up are left out: the locustfile starts its target again. run.json keeps it as ``repeat_command``.

A headless run's command is its ``argv``; what a ``LOCUST_*``/``SWARMGAUGE_*`` variable or a config file (locust.conf,
pyproject.toml ``[tool.locust]``, ``--config``) applied is not on it. :func:`applied_outside_argv` writes those as
options, the same way (:func:`option_words`, secrets as ``***``), with where each came from; run.json keeps them as
``options_outside_argv`` and the report's command row appends them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import shlex
from typing import Any

from locust import argument_parser, events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.listeners.run_redaction import REDACTED, is_secret_name, redact
from swarmgauge.listeners.rundir import add_run_info, run_info
from swarmgauge.listeners.webui_form import set_at_start_up, web_options

LOCUST_RUN_OPTIONS = (("stop_timeout", "--stop-timeout"),)
FORM_PLAN_DESTS = ("steps", "step_time")
#: configargparse's names for the sources it took a value from, besides the command line and the defaults
ENV_SOURCE, CONFIG_SOURCE = "environment_variables", "config_file|"


def _embedded(environment: Environment, host: str) -> bool:
    """The host is a target the locustfile started itself (on a new port each time): the repeat starts it again."""
    targets = run_info(environment).get("embedded_targets") or {}
    return isinstance(targets, dict) and any(isinstance(t, dict) and t.get("url") == host for t in targets.values())


def _seconds(value: float) -> str:
    return f"{max(1, math.ceil(value))}s"


def option_words(action: argparse.Action, value: Any, environment: Environment) -> list[str]:
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
        words += option_words(action, getattr(parsed, dest, None), environment)
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


def _as_given(action: argparse.Action, text: Any, parsed: Any) -> Any:
    """A one-value option as it was written (``2s``, not the seconds Locust's parser made of it); a flag or a list as
    parsed."""
    single = action.nargs is None and not isinstance(action, argparse._AppendAction)
    return text if single and isinstance(text, str) else getattr(parsed, action.dest, None)


def applied_outside_argv(environment: Environment) -> dict[str, Any]:
    """The options the run's parse took from the environment or a config file, not ``argv``: ``words`` to append to
    the command (:func:`option_words`: a secret as ``***``, a default left out) and ``from`` (each flag's variable or
    ``config file PATH``). Found by parsing again as Locust did (same ``argv``, environment and files), which is the
    one record of sources configargparse keeps."""
    parser = argument_parser.get_parser()
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # its usage line would be a second, wrong error
            parsed = parser.parse_args()
    except SystemExit:  # a parse that fails now (it did not at start-up) says nothing of where options came from
        return {"words": [], "from": {}}
    words: list[str] = []
    found: dict[str, str] = {}
    done: set[str] = set()
    for source, settings in parser.get_source_to_settings_dict().items():
        if source != ENV_SOURCE and not source.startswith(CONFIG_SOURCE):
            continue
        for key, (action, text) in settings.items():
            if action is None or action.dest in done:
                continue
            done.add(action.dest)
            said = option_words(action, _as_given(action, text, parsed), environment)
            if said:
                words += said
                found[said[0]] = key if source == ENV_SOURCE else f"config file {source[len(CONFIG_SOURCE) :]}"
    return {"words": words, "from": found}


@events.init.add_listener
def _record_outside_argv(environment: Environment, **_kwargs: Any) -> None:
    if not isinstance(environment.runner, WorkerRunner):
        add_run_info(environment, "options_outside_argv", applied_outside_argv(environment))
