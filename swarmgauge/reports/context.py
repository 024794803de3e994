"""The report's opening: what was run, when, for how long, against what, with which versions and plan.

Everything comes from ``run.json`` (written by :mod:`listeners.rundir`, secrets already redacted there), so a report
rendered a month later still says which command and which versions made the figures. A plan stopped by
``-t/--run-time`` or a signal is said to be cut short, with the steps that never ran; a run ended by a signal, or
killed before it closed (``reports/run_state.py``), says which.
"""

from __future__ import annotations

import html
import json
import shlex
import time
from pathlib import Path
from typing import Any

from swarmgauge.core.durations import UNTIL_STOPPED
from swarmgauge.core.sources import embedded_targets
from swarmgauge.reports import run_state

QUIC_ENGINES = ("aioquic", "qh3")


def load_run_json(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return {}


def _duration(seconds: float) -> str:
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _command(argv: list[str]) -> str:
    """``locust -f ...`` as typed: Locust's own ``__main__.py`` path shown as ``locust``."""
    if not argv:
        return ""
    first = "locust" if argv[0].endswith(("locust/__main__.py", "/locust")) else Path(argv[0]).name
    return " ".join([first] + [shlex.quote(a) for a in argv[1:]])


def _outside_argv(info: dict[str, Any]) -> dict[str, Any]:
    found = info.get("options_outside_argv")
    return found if isinstance(found, dict) else {}


def headless_command(info: dict[str, Any]) -> str:
    """The command that repeats a headless run: its ``argv``, then the options a ``LOCUST_*`` variable or a config
    file applied (``listeners/repeat_command.py`` wrote them, secrets as ``***``)."""
    typed = _command(info.get("argv") or [])
    words = [str(w) for w in _outside_argv(info).get("words") or []]
    return " ".join([typed, shlex.join(words)]) if typed and words else typed


def _set_outside_argv(info: dict[str, Any]) -> str:
    """``--run-time (LOCUST_RUN_TIME), --mdk-profile (config file locust.conf)``: where the appended options came from."""
    found = _outside_argv(info).get("from") or {}
    return ", ".join(f"{flag} ({source})" for flag, source in found.items()) if isinstance(found, dict) else ""


def _until_stopped(stage: dict[str, Any]) -> bool:
    """A stage with no set end (an older run.json gives it the engine's year instead of ``until_stopped``)."""
    return bool(stage.get("until_stopped")) or float(stage.get("duration") or 0) >= UNTIL_STOPPED


def _plan(plan: dict[str, Any] | None) -> str:
    if not plan:
        return ""
    stages = plan.get("stages") or []
    total = sum(float(s.get("duration") or 0) for s in stages if not _until_stopped(s))
    length = _duration(total)
    if any(_until_stopped(s) for s in stages):
        length = f"{length}, then until stopped" if total else "until stopped"
    labels = ", ".join(str(s.get("label")) for s in stages[:8]) + (" ..." if len(stages) > 8 else "")
    return f"{plan.get('name')} ({plan.get('kind')}, {len(stages)} stage(s), {length}: {labels})"


def _workers(info: dict[str, Any]) -> str:
    """How many workers took part and how many were lost; a local run had none, which is not "0 workers"."""
    runner = info.get("runner")
    if not runner:
        return ""
    if runner == "LocalRunner":
        return f"local run ({runner})"
    lost = len(info.get("lost_workers") or [])
    return f"{info.get('workers')} ({runner})" + (f", {lost} lost during the run" if lost else "")


def _user_classes(info: dict[str, Any]) -> str:
    """The classes that ran, and the locustfile's others that a plan or ``--class`` left out."""
    ran = list(info.get("user_classes") or [])
    offered = info.get("locustfile_user_classes")
    if offered is None:
        return ", ".join(ran)
    if not ran:
        return f"none ran (offered: {', '.join(offered)})" if offered else ""
    idle = [name for name in offered if name not in ran]
    return ", ".join(ran) + (f" (not run: {', '.join(idle)})" if idle else "")


def _versions(versions: dict[str, str]) -> str:
    names = ["swarmgauge", "locust", *[e for e in QUIC_ENGINES if e in versions], "python"]
    return ", ".join(f"{name} {versions[name]}" for name in names if name in versions)


def _overrides(plan: dict[str, Any] | None) -> str:
    """What the plan replaced of what was asked (``-u`` typed in the web form, ``--mcp-churn-rate``, ...)."""
    found = (plan or {}).get("overrides") or []
    return "; ".join(str(o.get("message")) for o in found if isinstance(o, dict) and o.get("message"))


def cut_short_sentence(info: dict[str, Any]) -> str | None:
    cut = info.get("cut_short")
    if not cut:
        return None
    left = cut.get("steps_not_run") or []
    sentence = (
        f"The plan was cut short by {cut.get('by') or '-t/--run-time'} at {_duration(cut['run_time_s'])} of its "
        f"{_duration(cut['planned_s'])}, during step {cut.get('during_step')!r}"
    )
    return sentence + (f"; steps not run: {', '.join(left)}." if left else ".")


def _exit_code(info: dict[str, Any]) -> str:
    """``1: user code raised 78 exceptions (...)``: the code with every reason the run recorded for it."""
    code = info.get("exit_code")
    if code is None:
        return ""
    reasons = [str(r) for r in info.get("exit_reasons") or []]
    return f"{code}: {'; also '.join(reasons)}" if reasons else str(code)


def context_rows(info: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, value) pairs for the run context table; fields without data are left out."""
    started, ended = info.get("started_at"), info.get("ended_at")
    rows = [
        ("date", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(started))) if started else ""),
        ("duration", _duration(float(ended) - float(started)) if started and ended else ""),
        ("locustfile", str(info.get("locustfile") or "")),
        ("user classes", _user_classes(info)),
        (
            "target",
            str(info.get("host") or "")
            + "".join(f" (embedded {name}, pid {t['pid']})" for name, t in embedded_targets(info).items()),
        ),
        ("command", str(info.get("repeat_command") or headless_command(info))),
        ("set outside the command line", "" if info.get("repeat_command") else _set_outside_argv(info)),
        ("web UI launched as", _command(info.get("argv") or []) if info.get("repeat_command") else ""),
        ("versions", _versions(info.get("versions") or {})),
        ("workers", _workers(info)),
        ("plan", _plan(info.get("plan"))),
        ("plan replaced", _overrides(info.get("plan"))),
        ("exit code", _exit_code(info)),
        ("ended by", run_state.ended_by_text(info)),
    ]
    return [(name, value) for name, value in rows if value]


def render(info: dict[str, Any]) -> tuple[str, str]:
    """(markdown, html) of the run context; empty strings when run.json is missing."""
    rows = context_rows(info)
    if not rows:
        return "", ""
    md = ["| run | |", "|---|---|"] + [f"| {name} | {value.replace('|', '&#124;')} |" for name, value in rows]
    body = (
        "<table class='context'>"
        + "".join(
            f"<tr><th>{html.escape(name)}</th><td style='text-align:left;white-space:normal'>"
            f"<code>{html.escape(value)}</code></td></tr>"
            if name in ("command", "web UI launched as")
            else f"<tr><th>{html.escape(name)}</th><td style='text-align:left;white-space:normal'>{html.escape(value)}</td></tr>"
            for name, value in rows
        )
        + "</table>"
    )
    for line in (run_state.sentence(info), cut_short_sentence(info)):
        if line:
            md += ["", f"**{line}**"]
            body += f"<p class='bound'><b>{html.escape(line)}</b></p>"
    return "\n".join(md), body
