"""Locust's start form and swarmgauge's options: values read with each option's own type, and no secret shown.

Locust's form handler converts a field by the type of the option's current value, so an empty list default makes it
call ``int('')`` and an unticked box overrides a value an embedded target set. :func:`apply_form` takes every
non-Locust option out of the form first and sets it the way the command line would have; :func:`scrub_template_args`
shows the values the run will really use in the form, with secrets blank. Whoever reaches the form may not write
anywhere: a path it gives to write to (:data:`WRITTEN_PATHS`) must lie inside the launch's ``--run-dir``
(:func:`check_written_paths`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from locust.env import Environment
from werkzeug.datastructures import ImmutableMultiDict

from swarmgauge.core.options import check_options
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.listeners.run_redaction import is_secret_name, redact
from swarmgauge.run_folders import is_inside

LIST_SEPARATORS = (",", ";")
#: The form's fields that name a place the run writes to, by dest, with their flag.
WRITTEN_PATHS = {"run_dir": "--run-dir", "slo_junit": "--slo-junit"}


class FormError(ValueError):
    """A value typed into the start form that its option does not accept."""


def _parser() -> Any:
    from locust import argument_parser

    return argument_parser.get_parser()


def _locust_dests() -> set[str]:
    from locust import argument_parser

    return set(argument_parser.default_args_dict())


def web_options() -> dict[str, argparse.Action]:
    """swarmgauge's (and any plugin's) options shown in the form, by dest; Locust's own are left to Locust."""
    parser = _parser()
    locust_own = _locust_dests()
    return {dest: action for dest, action in parser.args_included_in_web_ui.items() if dest not in locust_own}


@dataclass
class StartUpOptions(PerEnvironment):
    """Owned by ``listeners/webui_form.py``: the options code set at start-up, computed before the first START."""

    code_set: set[str] | None = None
    #: the ``--run-dir`` the process was started with ("" if none), read before the first START changed it
    launch_run_dir: str | None = None


def launch_run_dir(environment: Environment) -> str:
    """The ``--run-dir`` of the launch: the one folder the form may write into (kept from before the first START)."""
    record = StartUpOptions.of(environment)
    if record.launch_run_dir is None:
        value = getattr(environment.parsed_options, "run_dir", None)
        record.launch_run_dir = value if isinstance(value, str) else ""
    return record.launch_run_dir


def check_written_paths(environment: Environment, values: dict[str, Any]) -> None:
    """A :class:`FormError` for a path to write to outside the launch's ``--run-dir`` (``..``, another absolute
    path, a symlink leading out: the path is resolved before it is compared)."""
    root = launch_run_dir(environment)
    for dest, flag in WRITTEN_PATHS.items():
        value = values.get(dest)
        if not value:
            continue
        if not root:
            raise FormError(
                f"{flag} {value!r}: the web form writes only inside the --run-dir swarmgauge was started with, "
                "and it was started without one"
            )
        if not is_inside(str(value), root):
            raise FormError(
                f"{flag} {value!r}: outside {root}, the --run-dir swarmgauge was started with; the web form "
                "writes only there"
            )


def set_at_start_up(environment: Environment, dests: Iterable[str]) -> set[str]:
    """Those of ``dests`` whose value differs from what the command line, environment and config gave: code set
    them at start-up (an embedded target), so the form must not undo them and a repeat command does not name them.
    Computed once for every option (the form's and the others the repeat command names), before the first START."""
    record = StartUpOptions.of(environment)
    if record.code_set is None:
        given = vars(_parser().parse_args())
        current = vars(environment.parsed_options) if environment.parsed_options is not None else {}
        record.code_set = {dest for dest, value in current.items() if dest in given and value != given[dest]}
    return record.code_set & set(dests)


def _is_flag(action: argparse.Action) -> bool:
    return action.nargs == 0


def _is_list(action: argparse.Action, current: Any) -> bool:
    return isinstance(action, argparse._AppendAction) or action.nargs in ("*", "+") or isinstance(current, list)


def _convert_one(action: argparse.Action, text: str) -> Any:
    value: Any = text
    if callable(action.type):
        try:
            value = action.type(text)
        except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
            raise FormError(f"{action.option_strings[0]} {text!r}: {exc}") from None
    if action.choices is not None and value not in action.choices:
        raise FormError(f"{action.option_strings[0]} {text!r}: choose from {', '.join(map(str, action.choices))}")
    return value


def convert(action: argparse.Action, texts: list[str], current: Any) -> Any:
    """The option's value for what the form holds; an empty field means the option's default."""
    if _is_flag(action):
        ticked = any(t.strip().lower() in ("true", "on", "1", "yes") for t in texts)
        return ticked if action.const is not False else not ticked
    if _is_list(action, current):
        items = [part.strip() for text in texts for part in _split(text) if part.strip()]
        if not items:
            return action.default
        return [_convert_one(action, item) for item in items]
    text = (texts[-1] if texts else "").strip()
    return action.default if text == "" else _convert_one(action, text)


def _split(text: str) -> list[str]:
    for separator in LIST_SEPARATORS[1:]:
        text = text.replace(separator, LIST_SEPARATORS[0])
    return text.split(LIST_SEPARATORS[0])


def apply_form(environment: Environment, form: Any) -> ImmutableMultiDict:
    """Set every non-Locust option present in ``form`` on ``parsed_options``; return the form Locust should see."""
    options = web_options()
    keep = set_at_start_up(environment, options)
    launch_run_dir(environment)
    parsed = environment.parsed_options
    handled, values = set(), {}
    for dest, action in options.items():
        if dest not in form:
            continue
        handled.add(dest)
        texts = form.getlist(dest)
        current = getattr(parsed, dest, None)
        if dest in keep:
            continue
        if _secret(dest, action) and not any(t.strip() for t in texts):
            continue
        if ",".join(texts) == _shown(current, environment):
            continue  # left as the form showed it: keep the value exactly (a redacted URL stays whole)
        values[dest] = convert(action, texts, current)
    if parsed is not None:  # the ranges init checks, before any value is set
        check_options(argparse.Namespace(**{**vars(parsed), **values}))
    check_written_paths(environment, values)
    for dest, value in values.items():  # only once every field converted and checked: a bad one changes nothing
        setattr(parsed, dest, value)
    return ImmutableMultiDict([(k, v) for k, v in form.items(multi=True) if k not in handled])


def apply_common_fields(environment: Environment, form: Any) -> None:
    """Users, spawn rate and run time as Locust's handler will set them, now, so the plan rebuilt before it sees them
    (a shape's fallback plan is ``-u/-r/-t``); a value Locust would refuse is left for Locust to refuse."""
    from locust.util.timespan import parse_timespan

    parsed = environment.parsed_options
    readers: dict[str, tuple[str, Callable[[str], object]]] = {
        "user_count": ("num_users", int),
        "spawn_rate": ("spawn_rate", float),
        "run_time": ("run_time", parse_timespan),
    }
    for field, (dest, read) in readers.items():
        text = (form.get(field) or "").strip()
        if not text:
            continue
        try:
            setattr(parsed, dest, read(text))
        except ValueError:
            continue


def _secret(dest: str, action: Any) -> bool:
    return bool(getattr(action, "is_secret", False)) or is_secret_name(dest)


def _shown(value: Any, environment: Environment) -> Any:
    """An option's value as the form shows it: lists as comma-separated text, secrets inside strings redacted."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return redact(value, environment) if isinstance(value, str) else value


def scrub_template_args(environment: Environment, template_args: dict[str, Any]) -> None:
    """Show each option's value for this run in the form (lists as text) and no secret value anywhere."""
    extra = template_args.get("extra_options") or {}
    parsed = environment.parsed_options
    for dest, entry in extra.items():
        if entry.get("is_secret") or is_secret_name(dest):
            entry["default_value"] = ""
            continue
        value = getattr(parsed, dest) if parsed is not None and hasattr(parsed, dest) else entry.get("default_value")
        entry["default_value"] = _shown(value, environment)
    if isinstance(template_args.get("host"), str):
        template_args["host"] = redact(template_args["host"], environment)
