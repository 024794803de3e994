"""The headless command line that repeats a web UI run: what the form held and what the launch set, not how the UI
was served.

A UI run's users, steps and SLOs were typed into the form, so its ``argv`` alone could not repeat it.
:func:`repeat_command` writes ``locust -f FILE --headless --host H``, then the users (``-u N -r R -t T``, or for a
form-driven run whose count was edited the counts as held, ``--steps 2,6,10 --step-time T`` with T the longest hold),
then every form option that differs from its default (``--steps``, ``--slo``, ...: the form's value), then every other
option the launch set on its command line, in a ``LOCUST_*``/``SWARMGAUGE_*`` variable or in a config file
(``--mark-pool-size 8``, ``--stop-timeout 3``: as given), except the ones that only say how the UI process was started
(:data:`LAUNCH_ONLY`). Secrets are ``***``. An embedded target's host and the options code set at start-up are left
out: the locustfile sets them again. run.json keeps it as ``repeat_command``.

A headless run's command is its ``argv``; what a variable or a config file (locust.conf, pyproject.toml
``[tool.locust]``, ``--config``) applied is not on it. :func:`applied_outside_argv` writes those as options, the same
way, with where each came from; run.json keeps them as ``options_outside_argv`` and the report's command row appends
them. Both read where each option came from in one place, :func:`options_given`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import shlex
from dataclasses import dataclass
from typing import Any

from configargparse import already_on_command_line
from locust import argument_parser, events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.listeners.run_redaction import REDACTED, is_secret_name, redact
from swarmgauge.listeners.rundir import add_run_info, run_info
from swarmgauge.listeners.webui_form import set_at_start_up, web_options

FORM_PLAN_DESTS = ("steps", "step_time")
#: Locust's own fields of the start form besides users, spawn rate, run time, host and classes: the form's value wins.
LOCUST_FORM_DESTS = ("profile",)
#: configargparse's names for the sources it took a value from
COMMAND_LINE_SOURCE, ENV_SOURCE, CONFIG_SOURCE = "command_line", "environment_variables", "config_file|"
COMMAND_LINE = "command line"

#: Options (by dest) that only concern how the web UI process was started: the repeat is one headless local process
#: that starts at once, so none of them says anything about the run it repeats.
LAUNCH_ONLY = frozenset(
    {
        # where and how the UI was served: address, login, TLS, path, page build, class picker
        *("web_host", "web_host_display_name", "web_port", "web_auth", "web_login", "tls_cert", "tls_key"),
        *("web_base_path", "build_path", "legacy_ui", "class_picker"),
        # the mode and who starts and ends the run: the repeat is --headless (written once, by repeat_command)
        *("headless", "headful", "autostart", "autoquit"),
        # master/worker wiring: the repeat runs in one process, where a run's options apply as they did on the master
        *("master", "master_bind_host", "master_bind_port", "expect_workers", "expect_workers_max_wait"),
        *("expect_slaves", "enable_rebalancing", "worker", "slave", "master_host", "master_port", "processes"),
        "cluster_key_file",
        # the config file itself: each option it set is written on its own, where it is not launch-only
        "config",
        # what repeat_command writes itself: the locustfile, the host, the users and the classes picked
        *("locustfile", "host", "num_users", "spawn_rate", "run_time", "user_classes"),
        # options that print something and exit: no run has them
        *("help", "version", "list_commands", "show_task_ratio", "show_task_ratio_json"),
    }
)


@dataclass(frozen=True)
class GivenOption:
    """One option the launch set: its action, its value as given (``2s``, not the seconds parsed from it) and where
    it came from (``command line``, the variable's name or ``config file PATH``)."""

    action: argparse.Action
    value: Any
    source: str


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


def _as_given(action: argparse.Action, text: Any, parsed: Any) -> Any:
    """A one-value option as it was written (``2s``, not the seconds Locust's parser made of it); a flag or a list as
    parsed."""
    single = action.nargs is None and not isinstance(action, argparse._AppendAction)
    return text if single and isinstance(text, str) else getattr(parsed, action.dest, None)


def _typed(args: list[str], flags: list[str]) -> str | None:
    """The last value written after one of ``flags`` in ``args`` (``--flag V`` or ``--flag=V``), as typed."""
    text = None
    for index, word in enumerate(args):
        if word == "--":
            break
        name, equals, rest = word.partition("=")
        if equals and name in flags:
            text = rest
        elif word in flags and index + 1 < len(args):
            text = args[index + 1]
    return text


def _on_command_line(parser: Any, args: list[str]) -> dict[str, tuple[argparse.Action, Any]]:
    """configargparse's command-line record is ``argv`` itself; each option on it, found by configargparse's own
    test (the one that keeps a variable from overriding it), with its text."""
    found: dict[str, tuple[argparse.Action, Any]] = {}
    for action in parser._actions:
        if action.option_strings and already_on_command_line(args, action.option_strings, parser.prefix_chars):
            found[action.option_strings[0]] = (action, _typed(args, action.option_strings))
    return found


def options_given(environment: Environment) -> list[GivenOption]:
    """Every option the launch set on its command line, in a variable or in a config file, each once, where it won
    (the command line over a variable over a file). Found by parsing again as Locust did (same ``argv``, environment
    and files): configargparse's record of sources is kept only by the parser of its last parse."""
    parser = argument_parser.get_parser()
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # its usage line would be a second, wrong error
            parsed = parser.parse_args()
    except SystemExit:  # a parse that fails now (it did not at start-up) says nothing of where options came from
        return []
    given: list[GivenOption] = []
    done: set[str] = set()
    for source, settings in parser.get_source_to_settings_dict().items():
        if source == COMMAND_LINE_SOURCE:
            settings = _on_command_line(parser, settings[""][1])
        elif source != ENV_SOURCE and not source.startswith(CONFIG_SOURCE):
            continue  # the defaults
        for key, (action, text) in settings.items():
            if action is None or action.dest in done:
                continue
            done.add(action.dest)
            given.append(GivenOption(action, _as_given(action, text, parsed), _where(source, key)))
    return given


def _where(source: str, key: str) -> str:
    """What a person calls a configargparse source: the command line, the variable's name, the config file."""
    if source == COMMAND_LINE_SOURCE:
        return COMMAND_LINE
    return key if source == ENV_SOURCE else f"config file {source[len(CONFIG_SOURCE) :]}"


def applied_outside_argv(environment: Environment) -> dict[str, Any]:
    """The options the run's parse took from the environment or a config file, not ``argv``: ``words`` to append to
    the command (:func:`option_words`: a secret as ``***``, a default left out) and ``from`` (each flag's variable or
    ``config file PATH``)."""
    words: list[str] = []
    found: dict[str, str] = {}
    for option in options_given(environment):
        said = option_words(option.action, option.value, environment) if option.source != COMMAND_LINE else []
        if said:
            words += said
            found[said[0]] = option.source
    return {"words": words, "from": found}


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
    for action in argument_parser.get_parser()._actions:
        if action.dest in LOCUST_FORM_DESTS:
            words += option_words(action, getattr(parsed, action.dest, None), environment)
    return words


def _launch_options(environment: Environment) -> list[str]:
    """What the launch set besides the form's options and the launch itself, as given; not one code set at
    start-up."""
    given = [o for o in options_given(environment) if o.action.dest not in LAUNCH_ONLY]
    form = set(web_options()) | set(LOCUST_FORM_DESTS)
    code_set = set_at_start_up(environment, {o.action.dest for o in given})
    words: list[str] = []
    for option in given:
        if option.action.dest not in form and option.action.dest not in code_set:
            words += option_words(option.action, option.value, environment)
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
    words += _launch_options(environment)
    selected = list(getattr(options, "user_classes", None) or [])
    return shlex.join(words + selected)


@events.init.add_listener
def _record_outside_argv(environment: Environment, **_kwargs: Any) -> None:
    if not isinstance(environment.runner, WorkerRunner):
        add_run_info(environment, "options_outside_argv", applied_outside_argv(environment))
