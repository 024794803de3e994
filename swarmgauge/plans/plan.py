"""Stage plans: what a shape runs, from a YAML file or from options, validated before any user spawns.

A plan is a list of :class:`Stage` built from one of the kinds below; every kind expands to stages, so the shape
that runs it is the same. The keys are declared in :mod:`swarmgauge.plans.plan_schema` (with the JSON Schema
``docs/reference/plan.schema.json``); YAML keys (``swarmgauge/plans/*.yaml`` are examples)::

    name: demarkus-reads
    kind: step_ramp            # step_ramp | soak | arrival_rate | burst | churn | stages
    steps: [1, 4, 16, 64]      # step_ramp: users per step, strictly increasing
    step_time: 60s             # hold per step (s, m, h or a number of seconds)
    warmup: 5s                 # excluded from each step's statistics
    rate: 5                    # arrival_rate/burst/churn/soak: iterations (or sessions) per second
    rates: [10, 50, 100]       # arrival_rate: one stage per rate, step_time each
    duration: 40m              # soak/burst/churn/arrival_rate with one rate
    max_users: 64              # open model: the concurrency cap (k6's maxVUs)
    drop_after: 1s             # open model: a ticket not started within this is dropped
    users: 1                   # soak: fixed users (closed model)
    user_classes: [FetchUser]  # optional: which User classes the stages spawn
    slos: ["FETCH:p99<500ms"]  # checked at the end like --slo
    feeder: {file: rows.csv, mode: unique}  # test data, relative to the plan file (plans/plan_feeder.py)
    stages:                    # kind: stages, explicit list
      - {label: warm, users: 4, duration: 30s}
      - {label: ramp, rate: 10, rate_end: 50, duration: 60s, max_users: 32}
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, cast

from swarmgauge import plans
from swarmgauge.core.durations import UNTIL_STOPPED, parse_duration
from swarmgauge.errors import UsageError
from swarmgauge.plans.plan_feeder import PlanFeeder, parse_feeder
from swarmgauge.plans.plan_schema import KINDS, PLAN_KEYS, STAGE_KEYS

DEFAULT_MAX_USERS = 100
DEFAULT_DROP_AFTER = 1.0
MAX_USERS = 100_000  # per stage and process group: past this a typo (1e9) would only exhaust the generator's memory
MAX_RATE = 1_000_000.0
_TOP_KEYS = set(PLAN_KEYS)  # declared with their meanings and schema in shapes/plan_schema.py
_STAGE_KEYS = set(STAGE_KEYS)


def parse_number(value: Any, what: str, *, integer: bool = False, positive: bool = False) -> float:
    """A finite number >= 0 (a whole one, one above zero when asked); ``what`` names its field in the error."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UsageError(f"{what}: expected a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"{what}: expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise UsageError(f"{what}: must be a finite number, got {value!r}")
    if number < 0:
        raise UsageError(f"{what}: must not be negative, got {value!r}")
    if positive and number == 0:
        raise UsageError(f"{what}: must be greater than zero")
    if integer and number != int(number):
        raise UsageError(f"{what}: expected a whole number, got {value!r}")
    return number


def parse_number_list(value: Any, what: str, *, integer: bool = False, limit: float | None = None) -> list[float]:
    """``1,4,16`` (or ``1 4 16``, or a YAML list); an empty item such as ``1,,4`` is a typo, not a skip."""
    if isinstance(value, str):
        items = [v.strip() for v in value.strip().split(",")] if "," in value else value.split()
        if any(not v for v in items):
            raise UsageError(f"{what}: empty item in {value!r}")
        value = items
    if not isinstance(value, (list, tuple)) or not value:
        raise UsageError(f"{what}: expected a list such as 1,4,16, got {value!r}")
    numbers = [parse_number(v, what, integer=integer) for v in value]
    if limit is not None and any(n > limit for n in numbers):
        raise UsageError(f"{what}: {max(numbers):g} is past the limit of {limit:g}")
    return numbers


@dataclass(frozen=True)
class Stage:
    """One stage: closed (``users``) or open (``rate`` iterations/s, ramping to ``rate_end``, capped users)."""

    label: str
    duration: float
    users: int | None = None
    rate: float | None = None
    rate_end: float | None = None
    warmup: float = 0.0
    max_users: int | None = None
    drop_after: float = DEFAULT_DROP_AFTER
    spawn_rate: float | None = None
    user_classes: tuple[str, ...] | None = None

    @property
    def open_model(self) -> bool:
        return self.rate is not None

    @property
    def user_count(self) -> int:
        # an open stage always has max_users (_stage fills in the default)
        return int(cast(int, self.max_users) if self.open_model else self.users or 0)


@dataclass
class Plan:
    name: str
    kind: str
    stages: list[Stage]
    slos: list[str] = field(default_factory=list)
    source: str = "options"
    reference: dict[str, Any] | None = None
    #: What this run's plan replaced of what was asked: ``{"option", "given", "message"}`` each (run.json says it)
    overrides: list[dict[str, Any]] = field(default_factory=list)
    #: The plan's ``feeder:`` (its file resolved against the plan file's folder), None without one
    feeder: PlanFeeder | None = None

    @property
    def total_duration(self) -> float:
        return sum(s.duration for s in self.stages)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source,
            "slos": list(self.slos),
            "stages": [_stage_summary(s) for s in self.stages],
            "reference": self.reference,
            "overrides": list(self.overrides),
        }


def _stage_summary(stage: Stage) -> dict[str, Any]:
    """A stage for run.json: one with no set end says so, instead of the year the engine runs it for."""
    doc = asdict(stage)
    if stage.duration >= UNTIL_STOPPED:
        doc.update(duration=None, until_stopped=True)
    return doc


REFERENCE_FIGURES = ("rps", "p50_ms", "p99_ms")


def _reference(value: Any, where: str) -> dict[str, Any] | None:
    """``reference:`` - a reference page's published rows (``{page, rows: [{name, users|rate, rps, p50_ms, ...}]}``),
    and optionally how the page's target was configured (``target: {embedded: mark, args: "--backend-rps 160"}``), so
    a run against a target configured otherwise is told its page columns are for reference only."""
    if value is None:
        return None
    rows = value.get("rows") if isinstance(value, dict) else None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise UsageError(f"{where}: reference must be a mapping with page and a non-empty list of rows")
    for position, row in enumerate(rows, 1):
        if not row.get("name") or (row.get("users") is None) == (row.get("rate") is None):
            raise UsageError(f"{where}: reference row {position} needs a name and exactly one of users or rate")
        figures = [k for k in REFERENCE_FIGURES if k in row]
        if not figures or not all(isinstance(row[k], (int, float)) for k in figures):
            raise UsageError(
                f"{where}: reference row {position} needs numbers for some of {', '.join(REFERENCE_FIGURES)}"
            )
    reference: dict[str, Any] = {"page": str(value.get("page") or ""), "rows": rows}
    target = value.get("target")
    if target is not None:
        if not isinstance(target, dict) or not isinstance(target.get("embedded"), str) or not target.get("args"):
            raise UsageError(
                f"{where}: reference target must be a mapping with embedded (the target's name) and args "
                "(its options that simulate the page's bottleneck)"
            )
        reference["target"] = {"embedded": target["embedded"], "args": str(target["args"])}
    return reference


def _stage(raw: dict[str, Any], position: int, defaults: dict[str, Any], where: str) -> Stage:
    unknown = set(raw) - _STAGE_KEYS
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} in stage {position + 1}")
    merged = {**defaults, **raw}
    what = f"{where} stage {position + 1}"
    users = merged.get("users")
    rate = merged.get("rate")
    if (users is None) == (rate is None):
        raise UsageError(f"{what}: give exactly one of users or rate")
    if "duration" not in merged:
        raise UsageError(f"{what}: duration is missing")
    duration = parse_duration(merged["duration"], f"{what} duration")
    if duration <= 0:
        raise UsageError(f"{what}: duration must be greater than zero")
    classes = merged.get("user_classes")
    if classes is not None and (not isinstance(classes, (list, tuple)) or not all(isinstance(c, str) for c in classes)):
        raise UsageError(f"{what}: user_classes must be a list of class names")
    stage = Stage(
        label=str(
            merged.get("label")
            or (f"{int(parse_number(users, what))} users" if users is not None else f"{parse_number(rate, what):g}/s")
        ),
        duration=duration,
        users=int(parse_number(users, f"{what} users", integer=True)) if users is not None else None,
        rate=parse_number(rate, f"{what} rate", positive=True) if rate is not None else None,
        rate_end=parse_number(merged["rate_end"], f"{what} rate_end") if merged.get("rate_end") is not None else None,
        warmup=parse_duration(merged.get("warmup", 0), f"{what} warmup"),
        max_users=int(
            parse_number(merged.get("max_users", DEFAULT_MAX_USERS), f"{what} max_users", integer=True, positive=True)
        )
        if rate is not None
        else None,
        drop_after=parse_duration(merged.get("drop_after", DEFAULT_DROP_AFTER), f"{what} drop_after"),
        spawn_rate=parse_number(merged["spawn_rate"], f"{what} spawn_rate", positive=True)
        if merged.get("spawn_rate") is not None
        else None,
        user_classes=tuple(classes) if classes else None,
    )
    for count, name in ((stage.users, "users"), (stage.max_users, "max_users")):
        if count is not None and count > MAX_USERS:
            raise UsageError(f"{what}: {name} {count} is past the limit of {MAX_USERS}")
    for rate_value, name in ((stage.rate, "rate"), (stage.rate_end, "rate_end")):
        if rate_value is not None and rate_value > MAX_RATE:
            raise UsageError(f"{what}: {name} {rate_value:g}/s is past the limit of {MAX_RATE:g}/s")
    if stage.warmup >= stage.duration:
        raise UsageError(f"{what}: warmup ({stage.warmup:g}s) must be shorter than the stage ({stage.duration:g}s)")
    return stage


def build_plan(doc: dict[str, Any], *, source: str = "options", folder: Path | None = None) -> Plan:
    """Expand a plan document (YAML mapping or options) into stages, or raise UsageError saying what is wrong.

    ``folder`` is the plan file's: a relative ``feeder: file`` is read from there."""
    where = f"plan {source}"
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: expected a mapping of plan keys")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    kind = str(doc.get("kind") or doc.get("shape") or "").strip()
    if kind not in KINDS:
        raise UsageError(f"{where}: unknown shape {kind!r}; choose one of {', '.join(KINDS)}")
    common: dict[str, Any] = {
        k: doc[k] for k in ("warmup", "max_users", "drop_after", "spawn_rate", "user_classes") if k in doc
    }
    raws: list[dict[str, Any]]
    if kind == "step_ramp":
        steps = parse_number_list(doc.get("steps"), f"{where} steps", integer=True, limit=MAX_USERS)
        if any(b <= a for a, b in zip(steps, steps[1:])):
            raise UsageError(f"{where}: steps must be strictly increasing, got {', '.join(f'{s:g}' for s in steps)}")
        if steps[0] <= 0:
            raise UsageError(f"{where}: steps must start above zero users")
        step_time = doc.get("step_time")
        if step_time is None:
            raise UsageError(f"{where}: step_time is missing")
        raws = [{"users": int(s), "duration": step_time, "label": f"{int(s)} users"} for s in steps]
    elif kind == "arrival_rate" and doc.get("rates") is not None:
        rates = parse_number_list(doc.get("rates"), f"{where} rates", limit=MAX_RATE)
        raws = [{"rate": r, "duration": doc.get("step_time", doc.get("duration")), "label": f"{r:g}/s"} for r in rates]
    elif kind in ("soak", "arrival_rate", "burst", "churn"):
        if kind == "soak" and doc.get("users") is not None:
            raws = [{"users": doc["users"], "duration": doc.get("duration"), "label": f"soak {doc['users']} users"}]
        else:
            if doc.get("rate") is None:
                raise UsageError(f"{where}: rate is missing for a {kind} plan")
            unit = " sessions/s" if kind == "churn" else "/s"
            raws = [
                {
                    "rate": doc["rate"],
                    "duration": doc.get("duration"),
                    "label": f"{kind} {parse_number(doc['rate'], f'{where} rate'):g}{unit}",
                }
            ]
        raws = [{k: v for k, v in r.items() if v is not None} for r in raws]
    else:
        raws = doc.get("stages") or []
        if not isinstance(raws, list) or not raws:
            raise UsageError(f"{where}: stages must be a non-empty list")
    stages = [
        _stage(dict(r) if isinstance(r, dict) else _not_mapping(r, where), i, common, where) for i, r in enumerate(raws)
    ]
    slos = doc.get("slos") or []
    if not isinstance(slos, list) or not all(isinstance(s, str) for s in slos):
        raise UsageError(f"{where}: slos must be a list of expressions")
    return Plan(
        name=str(doc.get("name") or kind),
        kind=kind,
        stages=stages,
        slos=list(slos),
        source=source,
        reference=_reference(doc.get("reference"), where),
        feeder=parse_feeder(doc.get("feeder"), where, folder),
    )


def _not_mapping(raw: Any, where: str) -> dict[str, Any]:
    raise UsageError(f"{where}: each stage must be a mapping, got {raw!r}")


def bundled_plan_names() -> list[str]:
    """The plans ``--plan NAME`` finds without a path (``swarmgauge/plans/*.yaml``, package data)."""
    return plans.names()


def read_plan_doc(path: str | Path) -> tuple[Any, str]:
    """A plan file's YAML document (not yet checked) and the file it was read from, a path or a bundled plan's name."""
    import yaml

    file: Path | Traversable = Path(path)
    if not file.is_file():
        bundled = plans.bundled(Path(path).name)
        if not bundled.is_file():
            raise UsageError(
                f"plan file {str(path)!r} not found; give a YAML file's path or one of the bundled plans: "
                f"{', '.join(bundled_plan_names())}"
            )
        file = bundled
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"plan {file}: not a text file (a plan is YAML in UTF-8)") from None
    except OSError as exc:
        raise UsageError(f"plan {file}: cannot read it ({exc.strerror or exc})") from None
    if "\x00" in text:
        raise UsageError(f"plan {file}: not a text file (a plan is YAML in UTF-8)")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"plan {file}: not valid YAML ({first})") from None
    return doc, str(file)


def load_plan_file(path: str | Path) -> Plan:
    doc, source = read_plan_doc(path)
    return build_plan(doc, source=source, folder=Path(source).resolve().parent)


def plan_from_options(options: Any) -> Plan | None:
    """A plan from ``--plan`` or from ``--steps/--rate/...``; None when no plan option was given."""
    if getattr(options, "plan", None):
        return load_plan_file(options.plan)
    doc: dict[str, Any] = {}
    for key in ("steps", "step_time", "warmup", "rate", "duration", "max_users", "drop_after"):
        value = getattr(options, f"plan_{key}" if key == "duration" else key, None)
        if value not in (None, ""):
            doc[key] = value
    if not doc:
        return None
    if getattr(options, "shape_kind", None):
        doc["kind"] = options.shape_kind
    elif "steps" in doc:
        doc["kind"] = "step_ramp"
    elif "rate" in doc:
        rate = str(doc["rate"])
        if "," in rate:
            doc["kind"], doc["rates"] = "arrival_rate", doc.pop("rate")
        else:
            doc["kind"] = "arrival_rate"
    else:
        raise UsageError("plan options: give --steps (closed model) or --rate (open model), or --plan FILE")
    if doc["kind"] == "arrival_rate" and "," in str(doc.get("rate", "")):
        doc["rates"] = doc.pop("rate")
    return build_plan(doc, source="options")
