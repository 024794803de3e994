"""A plan's ``feeder:`` key: read relative to the plan file, checked (one line naming the plan file and the key),
and filling only the feeder options a run was not given."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jsonschema
import pytest

from swarmgauge.core.feeder_settings import settings_from
from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import build_plan, load_plan_file
from swarmgauge.plans.plan_feeder import PlanFeeder, merge_plan_feeder

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "reference" / "plan.schema.json"
STEPS = "kind: step_ramp\nsteps: [1, 2]\nstep_time: 5s\n"


def _plan_file(folder: Path, feeder: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plan.yaml"
    path.write_text(STEPS + feeder)
    return path


def _unset_options(**given) -> argparse.Namespace:
    """The feeder options as the parser leaves them when the run was not given them."""
    return argparse.Namespace(
        **{"feeder": "", "feeder_mode": "", "feeder_exhausted": "", "feeder_batch": None, **given}
    )


def test_the_feeder_file_is_read_relative_to_the_plan_file(tmp_path):
    plan_file = _plan_file(
        tmp_path / "plans", "feeder: {file: data/rows.csv, mode: unique, exhausted: stop, batch: 50}\n"
    )
    plan = load_plan_file(plan_file)
    assert plan.feeder == PlanFeeder(str(tmp_path / "plans" / "data" / "rows.csv"), "unique", "stop", 50)


def test_an_absolute_feeder_file_stays_as_written(tmp_path):
    rows = tmp_path / "elsewhere" / "rows.jsonl"
    plan = load_plan_file(_plan_file(tmp_path / "plans", f"feeder: {{file: {rows}}}\n"))
    assert plan.feeder == PlanFeeder(str(rows))


def test_a_plan_without_a_feeder_has_none(tmp_path):
    assert load_plan_file(_plan_file(tmp_path, "")).feeder is None


@pytest.mark.parametrize(
    ("feeder", "words"),
    [
        ("feeder: rows.csv", "feeder must be a mapping"),
        ("feeder: {file: rows.csv, colour: red}", "feeder: unknown key(s) colour; known: file, mode, exhausted, batch"),
        ("feeder: {mode: unique}", "feeder: file is missing"),
        ("feeder: {file: rows.csv, mode: each}", "feeder: mode must be one of shared, unique, not 'each'"),
        ("feeder: {file: rows.csv, exhausted: loop}", "feeder: exhausted must be one of stop, recycle, not 'loop'"),
        ("feeder: {file: rows.csv, batch: 0}", "feeder: batch must be a whole number 1..1000, not 0"),
        ("feeder: {file: rows.csv, batch: 2.5}", "feeder: batch must be a whole number 1..1000, not 2.5"),
        ("feeder: {file: rows.csv, batch: true}", "feeder: batch must be a whole number 1..1000, not True"),
    ],
)
def test_a_bad_feeder_key_or_value_names_the_plan_file_and_the_key(tmp_path, feeder, words):
    plan_file = _plan_file(tmp_path, feeder + "\n")
    with pytest.raises(UsageError) as raised:
        load_plan_file(plan_file)
    assert str(raised.value).startswith(f"plan {plan_file}: {words}")


@pytest.mark.parametrize(
    "feeder",
    [
        {"file": "rows.csv", "colour": "red"},
        {"mode": "unique"},
        {"file": "rows.csv", "mode": "each"},
        {"file": "rows.csv", "batch": 0},
        "rows.csv",
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(feeder):
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    doc = {"kind": "step_ramp", "steps": [1], "step_time": 5, "feeder": feeder}
    assert list(validator.iter_errors(doc))
    with pytest.raises(UsageError):
        build_plan(doc)


def test_the_schema_takes_a_full_feeder():
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    feeder = {"file": "rows.csv", "mode": "unique", "exhausted": "recycle", "batch": 50}
    assert list(validator.iter_errors({"kind": "step_ramp", "steps": [1], "step_time": 5, "feeder": feeder})) == []


def test_the_plan_fills_the_options_the_run_was_not_given():
    options = _unset_options()
    overrides = merge_plan_feeder(options, PlanFeeder("/d/rows.csv", "unique", None, 50), "p.yaml")
    assert overrides == []
    settings = settings_from(options)
    assert (settings.path, settings.mode, settings.exhausted, settings.batch) == ("/d/rows.csv", "unique", "stop", 50)


def test_an_option_given_for_the_run_wins_over_the_plan_and_says_so():
    options = _unset_options(feeder_mode="shared", feeder_batch=7)
    overrides = merge_plan_feeder(options, PlanFeeder("/d/rows.csv", "unique", "stop", 50), "p.yaml")
    assert (options.feeder, options.feeder_mode, options.feeder_exhausted, options.feeder_batch) == (
        "/d/rows.csv",
        "shared",
        "stop",
        7,
    )
    assert [(o["option"], o["given"], o["plan"]) for o in overrides] == [
        ("--feeder-mode", "shared", "unique"),
        ("--feeder-batch", 7, 50),
    ]
    assert (
        overrides[0]["message"]
        == "--feeder-mode shared (given for the run) wins over plan p.yaml's feeder mode: unique"
    )


def test_an_option_equal_to_the_plans_value_is_no_override():
    options = _unset_options(feeder_mode="unique")
    assert merge_plan_feeder(options, PlanFeeder("/d/rows.csv", "unique"), "p.yaml") == []


def test_unset_options_take_the_defaults_without_a_plan():
    settings = settings_from(_unset_options(feeder="/d/rows.csv"))
    assert (settings.mode, settings.exhausted, settings.batch) == ("shared", "recycle", 20)
