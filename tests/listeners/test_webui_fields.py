"""The start form's swarmgauge fields (groups, labels, flags, clean help), the plan it says START will run, the
class picker keeping the shape, and the live tab's figures and verdicts as the report writes them."""

from __future__ import annotations

import argparse
import re
import time
from types import SimpleNamespace

from werkzeug.datastructures import ImmutableMultiDict

from swarmgauge.core.hooks import StepInfo
from swarmgauge.core.trend import Warmup
from swarmgauge.listeners import live, rundir, step_state, webui, webui_fields
from swarmgauge.listeners.step_stats import StepRecorder
from swarmgauge.shapes import PlanShape
from tests.listeners.test_live import TARGET, _local_environment, _sampled

THREE_SIGNIFICANT = re.compile(r"^(\d{3,}|\d{2}\.\d|\d\.\d\d|0\.\d*[1-9]\d\d) (ms|s|req/s)$")


def test_help_loses_the_env_tail_and_the_doubled_percent():
    text = "ignore this much: 30s or 10%% (default 10%%) [env LOCUST_SAMPLE_WARMUP or SWARMGAUGE_SAMPLE_WARMUP]"
    assert webui_fields.clean_help(text) == "ignore this much: 30s or 10% (default 10%)"


def test_fields_have_human_labels_and_their_flag():
    assert webui_fields.human_label("mark_ca", "--mark-ca") == "Mark CA file"
    assert webui_fields.human_label("slo_abort", "--slo-abort") == "SLO abort"
    assert webui_fields.human_label("plan_duration", "--duration") == "Duration"
    assert webui_fields.human_label("mcp_churn_rate", "--mcp-churn-rate") == "MCP churn rate"


def test_the_form_lists_the_plan_first_then_gates_sampling_and_protocols():
    extra = {
        dest: {"default_value": None, "help_text": f"{dest} help [env LOCUST_X or SWARMGAUGE_X]"}
        for dest in ("mark_ca", "no_report", "slo", "sample", "steps", "slo_abort", "warmup", "step_time", "plan")
    }
    ordered = webui_fields.ordered_options(extra)
    assert list(ordered) == [
        "steps",
        "step_time",
        "warmup",
        "plan",
        "slo",
        "slo_abort",
        "sample",
        "no_report",
        "mark_ca",
    ]
    assert ordered["slo"]["help_text"] == "slo help"


def test_every_field_doc_names_the_forms_input_and_the_flag():
    docs = {doc["flag"]: doc for doc in webui_fields.field_docs()}
    assert docs["--step-time"]["name"] == "stepTime" and docs["--step-time"]["group"] == "Plan"
    assert docs["--slo"]["label"] == "SLO" and docs["--slo"]["group"] == "Gates"
    assert not any("%%" in doc["help"] or "[env " in doc["help"] for doc in docs.values())


def _shape_environment(**options) -> SimpleNamespace:
    parsed = argparse.Namespace(**{dest: None for dest in webui_fields.web_options()})
    parsed.__dict__.update(num_users=1, spawn_rate=1.0, run_time=None, **options)
    environment = _local_environment()
    shape = PlanShape()
    shape.runner = environment.runner
    environment.parsed_options = parsed
    environment.shape_class = shape
    return environment


def test_the_preview_is_the_plan_the_forms_values_make():
    environment = _shape_environment()
    assert webui_fields.plan_preview(environment)["plan"]["sets_users"] is False  # -u/-r as one step: used
    form = ImmutableMultiDict([("steps", "2,6"), ("stepTime", "10s"), ("userCount", "5")])
    preview = webui_fields.plan_preview(environment, form)
    plan = preview["plan"]
    assert plan["stages"] == ["2 users for 10 s", "6 users for 10 s"] and plan["duration"] == "20 s"
    assert plan["sets_users"] and "sets each step's users" in plan["common_fields_reason"]
    assert environment.parsed_options.steps is None  # a preview changes nothing
    bad = webui_fields.plan_preview(environment, ImmutableMultiDict([("steps", "2,x")]))
    assert bad["plan"] is None and "steps" in bad["error"]


def test_the_class_picker_keeps_the_shape_in_effect():
    environment = _shape_environment()
    environment.available_shape_classes = {}
    form = webui_fields.keep_shape(environment, ImmutableMultiDict([("shape_class", "Default"), ("user_count", "1")]))
    assert form.getlist("shape_class") == ["PlanShape"] and form["user_count"] == "1"
    assert environment.available_shape_classes["PlanShape"] is environment.shape_class


def _one_step(environment, latencies: list[float]) -> None:
    step_state.state_of(environment).announced[0] = StepInfo(0, "2 users", 2, None, time.time() - 10.0)
    recorder = StepRecorder()
    for ms in latencies:
        recorder.record(0, "GET", "/", ms, failed=False)
    step_state.merge_batch(environment, "local", recorder.drain())


def test_the_tab_shows_a_run_scope_verdict_with_its_unit_and_figures_with_three_digits():
    environment = _local_environment()
    environment.parsed_options = argparse.Namespace(slo=["p99<50ms"])
    _one_step(environment, [80.13] * 40)
    rows = webui._tab_rows(environment)
    run_row = rows[-1]
    assert (run_row["step"], run_row["request"]) == (webui.RUN_SCOPE_STEP, "SLO p99<50ms")
    assert re.fullmatch(r"fail \(80\.\d ms > 50 ms\)", run_row["slo"]), run_row  # HDR keeps 3 digits
    measured = rows[0]
    assert re.fullmatch(r"80\.\d ms", measured["p99_ms"]) and measured["rps"].endswith(" req/s")
    assert all(THREE_SIGNIFICANT.match(measured[key]) for key in ("rps", "p50_ms", "p90_ms", "p99_ms")), measured


def test_the_live_page_names_an_embedded_target_as_the_report_does():
    environment = _local_environment()
    _sampled(environment, Warmup(fraction=0.1))
    rundir.add_run_info(environment, "embedded_targets", {"mark": {"pid": 4242, "url": "mark://x"}})
    sources = {series["source"] for series in live.resource_series(environment)}
    assert "embedded mark (pid 4242)" in sources and TARGET not in sources


def test_the_class_picker_is_on_by_default_and_its_help_says_so():
    from locust.argument_parser import get_parser

    parser = get_parser()
    assert parser.parse_args([]).class_picker is True
    assert "on by default with swarmgauge" in " ".join(parser.format_help().split())


def test_without_a_plan_the_preview_is_the_typed_users_until_stop():
    environment = _shape_environment()
    plan = webui_fields.plan_preview(environment, ImmutableMultiDict([("userCount", "3")]))["plan"]
    assert plan["stages"] == ["3 users until STOP"] and plan["sets_users"] is False


def test_a_step_scope_verdict_sits_on_its_steps_aggregated_row_with_its_unit():
    environment = _local_environment()
    environment.parsed_options = argparse.Namespace(slo=["GET:p50<2s@step"])
    _one_step(environment, [80.13] * 40)
    rows = webui._tab_rows(environment)
    aggregated = next(row for row in rows if row["request"] == "Aggregated")
    assert re.fullmatch(r"GET:p50<2s@step: pass \(0\.080\d s < 2 s\)", aggregated["slo"]), aggregated
    assert all(row["step"] != webui.RUN_SCOPE_STEP for row in rows)


class _Fetch:
    pass


class _Lookup:
    pass


def test_a_start_that_ticks_no_class_keeps_the_classes_the_run_was_given():
    """An API START (``user_count`` alone) with the picker on ran every class of the locustfile, and on a master
    sent workers started with FetchUser a class they lacked (KeyError): it keeps the launch's classes instead."""
    environment = SimpleNamespace(available_user_classes={"_Fetch": _Fetch, "_Lookup": _Lookup}, user_classes=[_Fetch])
    form = webui_fields.pick_classes(environment, ImmutableMultiDict([("user_count", "2")]))
    assert form.getlist("user_classes") == ["_Fetch"] and form["user_count"] == "2"
    assert environment.user_classes == [_Fetch]


def test_the_classes_ticked_at_start_are_the_ones_that_run():
    environment = SimpleNamespace(available_user_classes={"_Fetch": _Fetch, "_Lookup": _Lookup}, user_classes=[_Fetch])
    form = webui_fields.pick_classes(environment, ImmutableMultiDict([("user_classes", "_Lookup")]))
    assert form.getlist("user_classes") == ["_Lookup"] and environment.user_classes == [_Lookup]
