"""The keys of a plan file, declared once: the loader (:mod:`swarmgauge.plans.plan`) accepts exactly these, and
``swarmgauge docs`` renders them and the JSON Schema (``docs/reference/plan.schema.json``) an editor can check a
plan file with. The schema checks shapes of values (a duration, a list of users); the loader checks the rest
(steps strictly increasing, a warm-up shorter than its stage, the limits) and says what is wrong in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swarmgauge.plans.plan_feeder import FEEDER_SCHEMA

KINDS = ("step_ramp", "soak", "arrival_rate", "burst", "churn", "stages")


@dataclass(frozen=True)
class Key:
    """One plan key: the JSON Schema of its value and what it means."""

    schema: dict[str, Any]
    meaning: str


DURATION: dict[str, Any] = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": r"^\s*(\d+(\.\d+)?|(\d+(\.\d+)?\s*(ms|min|h|m|s)\s*)+)\s*$"},
    ],
    "description": "seconds, or number-unit parts: 500ms, 30s, 5m, 1h30m",
}
NUMBER: dict[str, Any] = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": r"^\s*\+?\d+(\.\d+)?([eE][-+]?\d+)?\s*$"},
    ]
}
WHOLE: dict[str, Any] = {"type": "integer", "minimum": 0}
POSITIVE_WHOLE: dict[str, Any] = {"type": "integer", "minimum": 1}
POSITIVE_NUMBER: dict[str, Any] = {"type": "number", "exclusiveMinimum": 0}
NAMES: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
NUMBER_LIST: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 1},
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?(\s*[,\s]\s*\d+(\.\d+)?)*\s*$"},
    ]
}

STAGE_KEYS: dict[str, Key] = {
    "label": Key({"type": "string"}, "the stage's name in steps.csv and the report"),
    "users": Key(WHOLE, "closed model: users to hold (exactly one of users or rate)"),
    "rate": Key(NUMBER, "open model: iterations per second (exactly one of users or rate)"),
    "rate_end": Key(NUMBER, "open model: ramp the rate linearly to this by the stage's end"),
    "duration": Key(DURATION, "how long the stage lasts (required)"),
    "warmup": Key(DURATION, "start of the stage left out of its statistics"),
    "max_users": Key(POSITIVE_WHOLE, "open model: the concurrency cap (default 100)"),
    "drop_after": Key(DURATION, "open model: a ticket not started within this is dropped (default 1s)"),
    "spawn_rate": Key(POSITIVE_NUMBER, "users started per second when the user count changes"),
    "user_classes": Key(NAMES, "which User classes the stage spawns"),
}

REFERENCE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "page": {"type": "string"},
        "rows": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        },
        "target": {
            "type": "object",
            "required": ["embedded", "args"],
            "properties": {"embedded": {"type": "string"}, "args": {"type": "string"}},
        },
    },
    "required": ["rows"],
}

PLAN_KEYS: dict[str, Key] = {
    "name": Key({"type": "string"}, "the plan's name in run.json and the report (default: the kind)"),
    "description": Key({"type": "string"}, "free text"),
    "kind": Key({"enum": list(KINDS)}, "what expands into stages: " + ", ".join(KINDS)),
    "shape": Key({"enum": list(KINDS)}, "another name for kind"),
    "steps": Key(
        {
            "anyOf": [
                {"type": "array", "items": POSITIVE_WHOLE, "minItems": 1},
                {"type": "string", "pattern": r"^\s*\d+(\s*[,\s]\s*\d+)*\s*$"},
            ]
        },
        "step_ramp: users per step, strictly increasing (a list, or `1,4,16`)",
    ),
    "step_time": Key(DURATION, "step_ramp (and arrival_rate with rates): how long each step holds"),
    "warmup": Key(DURATION, "start of each stage left out of its statistics"),
    "rate": Key(NUMBER, "arrival_rate, burst, churn, soak: iterations (churn: sessions) per second"),
    "rates": Key(NUMBER_LIST, "arrival_rate: one stage per rate, step_time each"),
    "duration": Key(DURATION, "soak, burst, churn, arrival_rate with one rate: how long"),
    "max_users": Key(POSITIVE_WHOLE, "open model: the concurrency cap (k6's maxVUs; default 100)"),
    "drop_after": Key(DURATION, "open model: a ticket not started within this is dropped (default 1s)"),
    "users": Key(WHOLE, "soak: fixed users (closed model)"),
    "user_classes": Key(NAMES, "which User classes the stages spawn"),
    "slos": Key(NAMES, "thresholds checked at the end, as --slo (see slo.md)"),
    "stages": Key(
        {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/stage"}},
        "kind stages: the explicit list of stages (keys below)",
    ),
    "spawn_rate": Key(POSITIVE_NUMBER, "users started per second when the user count changes"),
    "reference": Key(
        REFERENCE,
        "a reference page's published rows ({page, rows: [{name, users or rate, rps, p50_ms, p99_ms}]}) and the "
        "target configuration they were measured with (target: {embedded, args})",
    ),
    "feeder": Key(
        FEEDER_SCHEMA,
        "test data for the Users ({file, mode, exhausted, batch}, as --feeder, --feeder-mode, --feeder-exhausted, "
        "--feeder-batch; file relative to the plan file); each of those options given for the run wins over the "
        "plan's value, and the run logs it and writes it to run.json (feeder.overrides)",
    ),
}

#: What each kind needs besides its kind (the loader says the same, in one line, when one is missing).
REQUIRED_BY_KIND: dict[str, list[str]] = {"step_ramp": ["steps", "step_time"], "stages": ["stages"]}


def _described(key: Key) -> dict[str, Any]:
    return {**key.schema, "description": key.meaning}


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a plan file."""
    conditions = [
        {
            "if": {"properties": {field: {"const": kind}}, "required": [field]},
            "then": {"required": needed},
        }
        for kind, needed in REQUIRED_BY_KIND.items()
        for field in ("kind", "shape")
    ]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "swarmgauge plan file",
        "description": "A stage plan for --plan FILE (YAML). Generated by `swarmgauge docs` from "
        "swarmgauge.plans.plan_schema; the loader checks what a schema cannot (steps strictly increasing, "
        "limits, a warm-up shorter than its stage).",
        "type": "object",
        "properties": {name: _described(key) for name, key in PLAN_KEYS.items()},
        "additionalProperties": False,
        "anyOf": [{"required": ["kind"]}, {"required": ["shape"]}],
        "allOf": conditions,
        "$defs": {
            "stage": {
                "type": "object",
                "properties": {name: _described(key) for name, key in STAGE_KEYS.items()},
                "additionalProperties": False,
                "required": ["duration"],
                "oneOf": [{"required": ["users"]}, {"required": ["rate"]}],
            }
        },
    }
