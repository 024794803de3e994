"""What Locust's start form shows of swarmgauge: its fields grouped and labelled, and the plan that START will run.

Locust's React form renders every extra option under "Custom parameters", alphabetically (Flask sorts the JSON
keys), labelled from the option's dest ("Mark Ca", "Slo Abort") with the whole help, ``[env ...]`` and ``10%%``
included. Here each field gets a group (Plan, Gates, Target, Sampling, Run record, then one per protocol), a human
label, its CLI flag and a clean help text; :func:`ordered_options` hands Locust the options in that order and
``/swarmgauge/api/form`` gives the labels to the small script the page loads (``webui_form.js``).

:func:`plan_preview` builds, from the form's values, the plan START will run (the shape's own ``build``, as at
START), so the form can say it above START and grey out the users and ramp fields a plan replaces.
"""

from __future__ import annotations

import argparse
import copy
import re
from typing import Any

from locust.env import Environment
from werkzeug.datastructures import ImmutableMultiDict

from swarmgauge.core.durations import UNTIL_STOPPED
from swarmgauge.core.user_hosts import missing_host
from swarmgauge.errors import UsageError
from swarmgauge.listeners.webui_form import FormError, convert, web_options

ENV_SUFFIX = re.compile(r"\s*\[env [A-Z0-9_]+ or [A-Z0-9_]+\]\s*$")
PLAN_FIELDS = ("steps", "step_time", "warmup", "plan", "rate", "plan_duration", "max_users", "drop_after", "shape_kind")
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Plan", PLAN_FIELDS),
    ("Gates", ("slo", "slo_abort")),
    ("Target", ()),
    ("Sampling", ("sample", "sample_interval", "sample_on", "sample_warmup")),
    ("Run record", ("run_dir", "no_report")),
)
TARGET_WORDS = ("embedded", "direct_mark", "kneo_hosts", "store_file")
PROTOCOLS = {"mark": "Mark", "mcp": "MCP", "kneo": "kneo", "mdk": "MDK", "brain": "Brain"}
OTHER_GROUP = "Other"
LABELS = {
    "plan": "Plan file",
    "steps": "Steps (users)",
    "step_time": "Step time",
    "warmup": "Warm-up",
    "plan_duration": "Duration",
    "max_users": "Max users",
    "slo": "SLO",
    "slo_abort": "SLO abort",
    "sample": "Sample target",
    "sample_on": "Sample on",
    "sample_warmup": "Sample warm-up",
    "mark_ca": "Mark CA file",
    "mark_server_name": "Mark TLS server name",
    "mark_insecure": "Mark: skip TLS verification",
    "mark_quic_engine": "Mark QUIC engine",
    "run_dir": "Run folder",
}
ACRONYMS = {"ca": "CA", "slo": "SLO", "mcp": "MCP", "mdk": "MDK", "tls": "TLS", "quic": "QUIC", "json": "JSON"}
ACRONYMS.update({"api": "API", "url": "URL", "id": "ID", "sni": "SNI", "http": "HTTP"})
COMMON_FIELDS_REASON = "the plan {name!r} sets each step's users and ramps them itself"


def clean_help(text: str | None) -> str:
    """The help as a reader wants it in a form: no ``[env ...]`` tail (the flag is shown beside), ``%`` not ``%%``."""
    return ENV_SUFFIX.sub("", (text or "").replace("%%", "%")).strip()


def flag_of(action: argparse.Action) -> str:
    longs = [s for s in action.option_strings if s.startswith("--")]
    return (longs or action.option_strings or [""])[0]


def human_label(dest: str, flag: str) -> str:
    """``--mark-server-name`` -> "Mark server name"; the named ones (``LABELS``) as written there."""
    if dest in LABELS:
        return LABELS[dest]
    words = [ACRONYMS.get(w, w) for w in (flag.lstrip("-") or dest).replace("_", "-").split("-") if w]
    if not words:
        return dest
    first = words[0] if words[0].isupper() else words[0].capitalize()
    first = PROTOCOLS.get(words[0], first)
    return " ".join([first, *words[1:]])


def group_of(dest: str) -> str:
    for title, members in GROUPS:
        if dest in members:
            return title
    if any(word in dest for word in TARGET_WORDS):
        return "Target"
    prefix = dest.split("_", 1)[0]
    return PROTOCOLS.get(prefix, OTHER_GROUP)


def _group_rank() -> dict[str, int]:
    titles = [title for title, _ in GROUPS] + list(PROTOCOLS.values()) + [OTHER_GROUP]
    return {title: rank for rank, title in enumerate(titles)}


def _sort_key(dest: str, position: int) -> tuple[int, int, int]:
    group = group_of(dest)
    members = dict(GROUPS).get(group, ())
    inside = members.index(dest) if dest in members else len(members)
    return _group_rank()[group], inside, position


def ordered_options(extra_options: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Locust's ``extra_options`` in the form's order, each help cleaned (the labels come from the script)."""
    order = sorted(enumerate(extra_options), key=lambda item: _sort_key(item[1], item[0]))
    ordered = {}
    for _, dest in order:
        entry = dict(extra_options[dest])
        entry["help_text"] = clean_help(entry.get("help_text"))
        ordered[dest] = entry
    return ordered


def field_docs() -> list[dict[str, str]]:
    """Every swarmgauge field of the form: its dest (the input's name), group, human label, flag and help."""
    docs = []
    for position, (dest, action) in enumerate(web_options().items()):
        if dest == "help":
            continue
        flag = flag_of(action)
        doc = {"name": camel(dest), "group": group_of(dest), "label": human_label(dest, flag), "flag": flag}
        doc["help"] = clean_help(action.help)
        docs.append((_sort_key(dest, position), doc))
    return [doc for _, doc in sorted(docs, key=lambda item: item[0])]


# -- the plan START will run ---------------------------------------------------------------------------------------
def camel(name: str) -> str:
    """``step_time`` -> ``stepTime``: the name Locust's React form gives the field (it submits the snake name)."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _form_texts(form: Any, name: str) -> list[str] | None:
    """The field's values under its snake name (as submitted) or its camel name (as the page's form holds it)."""
    for key in (name, camel(name)):
        if form is not None and key in form:
            return [str(text) for text in form.getlist(key)]
    return None


def _options_with_form(environment: Environment, form: Any) -> Any:
    """A copy of the run's options with the form's values on it, as START would set them (nothing changed)."""
    options = copy.copy(environment.parsed_options)
    for dest, action in web_options().items():
        texts = _form_texts(form, dest)
        if texts is not None:
            setattr(options, dest, convert(action, texts, getattr(options, dest, None)))
    for field, dest, read in (("user_count", "num_users", int), ("spawn_rate", "spawn_rate", float)):
        text = ((_form_texts(form, field) or [""])[-1]).strip()
        if text:
            try:
                setattr(options, dest, read(text))
            except ValueError:
                continue
    return options


def _duration_text(seconds: float) -> str:
    if seconds >= UNTIL_STOPPED:
        return "until STOP"
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:g} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _stage_text(stage: Any) -> str:
    if getattr(stage, "rate", None) is not None:
        what = f"{stage.rate:g}/s" + (f" to {stage.rate_end:g}/s" if stage.rate_end is not None else "")
    else:
        what = f"{stage.users} users"
    classes = f" ({', '.join(stage.user_classes)})" if stage.user_classes else ""
    held = "until STOP" if stage.duration >= UNTIL_STOPPED else f"for {_duration_text(stage.duration)}"
    return f"{what} {held}{classes}"


def _class_names(environment: Environment) -> list[str]:
    available = getattr(environment, "available_user_classes", None) or {}
    return sorted(available) or sorted(cls.__name__ for cls in environment.user_classes)


def plan_preview(environment: Environment, form: Any = None, class_picker: bool = False) -> dict[str, Any]:
    """The plan START would run with ``form``'s values: name, stages, duration, classes, and whether it sets the
    users and ramp (then ``common_fields_reason`` says why the form's Number of users and Ramp up are unused)."""
    classes = _class_names(environment)
    doc: dict[str, Any] = {"plan": None, "classes": classes, "class_picker": class_picker, "error": None}
    shape = getattr(environment, "shape_class", None)
    build = getattr(shape, "build", None)
    if build is None:
        return doc
    try:
        plan = build(_options_with_form(environment, form))
    except (UsageError, FormError) as exc:
        doc["error"] = str(exc)
        return doc
    stage_classes = sorted({name for stage in plan.stages for name in (stage.user_classes or ())})
    from_options = plan.source == "locust options"
    doc["plan"] = {
        "name": plan.name,
        "kind": plan.kind,
        "source": plan.source,
        "stages": [_stage_text(stage) for stage in plan.stages],
        "duration": _duration_text(plan.total_duration),
        "classes": stage_classes or classes,
        "classes_from_stages": bool(stage_classes),
        "slos": list(plan.slos),
        "sets_users": not from_options,
        "common_fields_reason": None if from_options else COMMON_FIELDS_REASON.format(name=plan.name),
    }
    return doc


def keep_shape(environment: Environment, form: Any) -> ImmutableMultiDict:
    """The form with ``shape_class`` naming the shape in effect, for Locust's class picker.

    With the picker on, Locust installs the shape the form names and "Default" (its first choice, and what an EDIT
    sends, having no such field) removes swarmgauge's shape: ``--steps`` would run as plain users. swarmgauge's plan
    decides the shape, so the form's choice is the one in effect (the page's script hides the select).
    """
    shape = getattr(environment, "shape_class", None)
    name = type(shape).__name__ if shape is not None else "Default"
    available = getattr(environment, "available_shape_classes", None)
    if shape is not None and isinstance(available, dict):
        available.setdefault(name, shape)
    kept = [(key, value) for key, value in form.items(multi=True) if key != "shape_class"]
    return ImmutableMultiDict([*kept, ("shape_class", name)])


def pick_classes(environment: Environment, form: Any) -> ImmutableMultiDict:
    """The User classes of this START, set before the plan is rebuilt (Locust sets the same ones right after, when
    its handler reads the form), so the plan sees the classes that will run; returns the form Locust reads.

    A START that ticks none (an API client posting ``user_count`` alone) keeps the classes the run already has,
    the command line's ``FetchUser`` or ``LOCUST_USER_CLASSES``: Locust's picker would otherwise run every class
    of the locustfile, and on a master send workers classes they were not started with.
    """
    available = getattr(environment, "available_user_classes", None) or {}
    picked = set(form.getlist("user_classes")) if form is not None else set()
    chosen = [cls for name, cls in available.items() if name in picked]
    if chosen:
        environment.user_classes = chosen
        return form
    kept = [cls.__name__ for cls in environment.user_classes or [] if cls.__name__ in available]
    return ImmutableMultiDict([*form.items(multi=True), *(("user_classes", name) for name in kept)])


def check_host(environment: Environment, form: Any) -> None:
    """A START whose Users need a host has one: the form's host field when it sent one, else the run's. Without it
    Locust "starts" a run whose every user fails in its constructor, and no user runs."""
    host = form.get("host") if form is not None and "host" in form else environment.host
    refusal = missing_host(environment.user_classes, (host or "").strip())
    if refusal:
        raise UsageError(refusal)
