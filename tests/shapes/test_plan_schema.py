"""The JSON Schema of plan files (``docs/reference/plan.schema.json``) and the loader agree: every bundled plan
passes both, and a bad plan fails both."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from swarmgauge import plans
from swarmgauge.errors import UsageError
from swarmgauge.shapes.plan import build_plan, bundled_plan_names, load_plan_file
from swarmgauge.shapes.plan_schema import json_schema

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "reference" / "plan.schema.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(COMMITTED.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_the_codes():
    assert json.loads(COMMITTED.read_text()) == json_schema()


@pytest.mark.parametrize("name", bundled_plan_names())
def test_every_bundled_plan_passes_the_schema_and_the_loader(name: str, validator: jsonschema.Draft202012Validator):
    doc = yaml.safe_load(plans.bundled(name).read_text(encoding="utf-8"))
    assert [error.message for error in validator.iter_errors(doc)] == []
    assert load_plan_file(name).stages


GOOD_STAGES = {"kind": "stages", "stages": [{"users": 4, "duration": "30s"}, {"rate": 10, "duration": 60}]}
BAD_PLANS = {
    "unknown top-level key": {"kind": "step_ramp", "steps": [1, 2], "step_time": "5s", "stepz": [4]},
    "unknown kind": {"kind": "ramp", "steps": [1, 2], "step_time": "5s"},
    "no kind": {"steps": [1, 2], "step_time": "5s"},
    "step_ramp without step_time": {"kind": "step_ramp", "steps": [1, 2]},
    "steps not numbers": {"kind": "step_ramp", "steps": ["one", "two"], "step_time": "5s"},
    "a duration without a unit it knows": {"kind": "step_ramp", "steps": [1, 2], "step_time": "5 parsecs"},
    "negative rate": {"kind": "arrival_rate", "rate": -5, "duration": "10s"},
    "stages empty": {"kind": "stages", "stages": []},
    "stage with an unknown key": {"kind": "stages", "stages": [{"users": 1, "duration": "5s", "userz": 2}]},
    "stage with users and rate": {"kind": "stages", "stages": [{"users": 1, "rate": 2, "duration": "5s"}]},
    "stage without duration": {"kind": "stages", "stages": [{"users": 1}]},
    "slos not a list of strings": {**GOOD_STAGES, "slos": [5]},
    "max_users zero": {**GOOD_STAGES, "max_users": 0},
}


def test_a_good_plan_passes_both(validator: jsonschema.Draft202012Validator):
    assert list(validator.iter_errors(GOOD_STAGES)) == []
    assert len(build_plan(GOOD_STAGES).stages) == 2


@pytest.mark.parametrize("what", sorted(BAD_PLANS))
def test_a_bad_plan_fails_the_schema_and_the_loader(what: str, validator: jsonschema.Draft202012Validator):
    doc = BAD_PLANS[what]
    assert list(validator.iter_errors(doc)), f"the schema let through: {what}"
    with pytest.raises(UsageError):
        build_plan(doc)
