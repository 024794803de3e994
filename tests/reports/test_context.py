"""The report's opening context, the reference page's figures beside the measured rows, and the plots' readability."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from matplotlib.figure import Figure

from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import build_plan, load_plan_file
from swarmgauge.reports import context
from swarmgauge.reports.plots import label_users_as_run, readable_top
from swarmgauge.reports.reference import beside_reference, reference_rows, target_caveat
from swarmgauge.reports.report import render_report

RUN_JSON = {
    "started_at": 1796290000.0,
    "ended_at": 1796290031.6,
    "locustfile": "locustfiles/demarkus_reads.py",
    "user_classes": ["FetchUser"],
    "host": "mark://127.0.0.1:5000",
    "embedded_targets": {"mark": {"pid": 42, "url": "mark://127.0.0.1:5000"}},
    "argv": ["/x/site-packages/locust/__main__.py", "-f", "locustfiles/demarkus_reads.py", "--mark-token", "***"],
    "versions": {"swarmgauge": "0.2.0", "locust": "2.47.0", "aioquic": "1.7.2", "python": "3.11.7"},
    "runner": "LocalRunner",
    "workers": 1,
    "exit_code": 0,
    "plan": {
        "name": "demo",
        "kind": "step_ramp",
        "stages": [{"label": "1 users", "duration": 10.0}, {"label": "4 users", "duration": 10.0}],
        "reference": {
            "page": "demarkus-kind-bench.md#reads",
            "rows": [{"name": "FETCH", "users": 1, "rps": 53, "p50_ms": 20, "p99_ms": 26}],
        },
    },
    "cut_short": {"run_time_s": 15.0, "planned_s": 20.0, "during_step": "4 users", "steps_not_run": []},
}


def test_context_rows_say_what_ran_when_against_what():
    rows = dict(context.context_rows(RUN_JSON))
    assert rows["date"].endswith("UTC") and rows["duration"] == "31.6 s"
    assert rows["target"] == "mark://127.0.0.1:5000 (embedded mark, pid 42)"
    assert rows["command"] == "locust -f locustfiles/demarkus_reads.py --mark-token '***'"
    assert rows["versions"] == "swarmgauge 0.2.0, locust 2.47.0, aioquic 1.7.2, python 3.11.7"
    assert rows["plan"] == "demo (step_ramp, 2 stage(s), 20.0 s: 1 users, 4 users)"
    assert context.cut_short_sentence(RUN_JSON) == (
        "The plan was cut short by -t/--run-time at 15.0 s of its 20.0 s, during step '4 users'."
    )
    assert context.context_rows({}) == [] and context.render({}) == ("", "")


def test_the_context_says_what_the_plan_replaced():
    override = {"option": "-u/--users", "given": 5, "message": "-u/--users 5 is not used: plan 'demo' sets the users"}
    info = {**RUN_JSON, "plan": {**RUN_JSON["plan"], "overrides": [override]}}
    assert dict(context.context_rows(info))["plan replaced"] == override["message"]
    assert "plan replaced" not in dict(context.context_rows(RUN_JSON))


def test_the_command_carries_the_options_set_outside_argv_and_says_where_each_came_from():
    outside = {
        "words": ["--run-time", "2s", "--mark-dsn", "postgres://u:***@h/db"],
        "from": {"--run-time": "LOCUST_RUN_TIME", "--mark-dsn": "config file locust.conf"},
    }
    rows = dict(context.context_rows({**RUN_JSON, "options_outside_argv": outside}))
    assert rows["command"] == (
        "locust -f locustfiles/demarkus_reads.py --mark-token '***' --run-time 2s --mark-dsn 'postgres://u:***@h/db'"
    )
    assert rows["set outside the command line"] == "--run-time (LOCUST_RUN_TIME), --mark-dsn (config file locust.conf)"
    assert "set outside the command line" not in dict(context.context_rows(RUN_JSON))  # argv was all of it
    web = dict(context.context_rows({**RUN_JSON, "options_outside_argv": outside, "repeat_command": "locust -x"}))
    assert web["command"] == "locust -x" and "set outside the command line" not in web  # the form's repeat command


def test_a_stage_without_an_end_reads_until_stopped_not_as_a_year():
    from types import SimpleNamespace

    from swarmgauge.shapes import PlanShape

    plan = PlanShape().fallback_plan(SimpleNamespace(num_users=8, run_time=None, spawn_rate=None)).summary()
    assert plan["stages"][0]["duration"] is None and plan["stages"][0]["until_stopped"] is True
    assert context._plan(plan) == "options (stages, 1 stage(s), until stopped: 8 users)"
    older = {"name": "options", "kind": "stages", "stages": [{"label": "8 users", "duration": 31536000.0}]}
    assert context._plan(older) == "options (stages, 1 stage(s), until stopped: 8 users)"
    mixed = {"name": "p", "kind": "stages", "stages": [{"label": "warm", "duration": 30.0}, plan["stages"][0]]}
    assert context._plan(mixed) == "p (stages, 2 stage(s), 30.0 s, then until stopped: warm, 8 users)"
    timed = PlanShape().fallback_plan(SimpleNamespace(num_users=8, run_time=90, spawn_rate=None)).summary()
    assert context._plan(timed) == "options (stages, 1 stage(s), 90.0 s: 8 users)"


def test_the_workers_row_counts_those_that_took_part_and_a_local_run_reads_as_local():
    master = {"runner": "MasterRunner", "workers": 2, "lost_workers": [{"worker": "w1"}]}
    assert dict(context.context_rows(master))["workers"] == "2 (MasterRunner), 1 lost during the run"
    assert dict(context.context_rows({"runner": "MasterRunner", "workers": 2}))["workers"] == "2 (MasterRunner)"
    assert dict(context.context_rows({"runner": "LocalRunner", "workers": 1}))["workers"] == "local run (LocalRunner)"


def test_user_classes_name_those_that_ran_and_the_locustfiles_others():
    picked = {"user_classes": ["FetchUser"], "locustfile_user_classes": ["FetchUser", "ListUser", "LookupUser"]}
    assert dict(context.context_rows(picked))["user classes"] == "FetchUser (not run: ListUser, LookupUser)"
    assert dict(context.context_rows({"user_classes": [], "locustfile_user_classes": ["A"]}))["user classes"] == (
        "none ran (offered: A)"
    )
    assert dict(context.context_rows(RUN_JSON))["user classes"] == "FetchUser", "an older run.json reads as before"


def test_reference_figures_sit_beside_the_measured_rows_with_the_difference():
    shown = pd.DataFrame(
        {
            "Request": ["FETCH /corpus", ""],
            "Step (users)": ["1", "4"],
            "req/s": ["106", "300"],
            "p50": ["10.0 ms", "1.20 s"],
            "p99": ["13.0 ms", "2.00 s"],
            "errors": [0, 0],
        }
    )
    table = beside_reference(shown, "FETCH /corpus", reference_rows(RUN_JSON))
    assert list(table["page req/s"]) == ["53.0", ""] and list(table["Δ req/s"]) == ["+100 %", ""]
    assert list(table["Δ p50"]) == ["-50 %", ""] and list(table["page p99"]) == ["26.0 ms", ""]
    assert beside_reference(shown, "LIST /corpus", reference_rows(RUN_JSON)) is shown


def test_the_report_opens_with_the_context_and_says_cut_short(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(RUN_JSON))
    md = render_report(tmp_path) and (tmp_path / "report.md").read_text()
    assert md.index("| date |") < md.index("**The plan was cut short")
    assert "embedded mark, pid 42" in (tmp_path / "report.html").read_text()


def test_reference_pages_plans_carry_their_figures_and_bad_ones_are_named_errors():
    plan = load_plan_file("demarkus-reads")
    assert plan.reference["page"] == "demarkus-kind-bench.md#reads"
    assert {(r["users"], r["rps"]) for r in plan.reference["rows"]} >= {(1, 53), (4, 160), (256, 151)}
    assert plan.summary()["reference"] == plan.reference
    base = {"kind": "step_ramp", "steps": [1], "step_time": "1s"}
    with pytest.raises(UsageError, match="reference must be a mapping with page and a non-empty list of rows"):
        build_plan({**base, "reference": {"page": "x"}}, source="t")
    with pytest.raises(UsageError, match="reference row 1 needs a name and exactly one of users or rate"):
        build_plan({**base, "reference": {"rows": [{"users": 1, "rps": 5}]}}, source="t")
    with pytest.raises(UsageError, match="reference row 1 needs numbers"):
        build_plan({**base, "reference": {"rows": [{"name": "FETCH", "users": 1, "rps": "fast"}]}}, source="t")


def demarkus_reads_run(embedded_args: list[str] | None, host: str = "mark://127.0.0.1:5000") -> dict:
    """run.json of a ``--plan demarkus-reads`` run: against the embedded server (with these options) or a host."""
    info = {**RUN_JSON, "host": host, "plan": load_plan_file("demarkus-reads").summary(), "cut_short": None}
    if embedded_args is None:
        info.pop("embedded_targets")
    else:
        info["embedded_targets"] = {"mark": {"pid": 42, "url": host, "args": ["--port", "0", *embedded_args]}}
    return info


def test_a_page_comparison_against_a_target_without_the_pages_simulation_says_so(tmp_path):
    info = demarkus_reads_run(["--seed-corpus", "300"])
    caveat = target_caveat(info)
    assert caveat is not None and "not simulating the page's bottleneck" in caveat
    assert "--read-delay-ms 9.2" in caveat and "--backend-concurrency 3" in caveat
    assert "page columns are for reference only" in caveat and "--mark-embedded-args" in caveat
    (tmp_path / "run.json").write_text(json.dumps(info))
    summary = render_report(tmp_path)
    assert summary["reference_caveat"] == caveat
    assert caveat in (tmp_path / "report.md").read_text()


def test_an_external_host_cannot_be_checked_and_says_so():
    caveat = target_caveat(demarkus_reads_run(None, host="mark://10.0.0.5:6309"))
    assert caveat is not None and "mark://10.0.0.5:6309" in caveat and "cannot be checked" in caveat


def test_an_embedded_target_configured_like_the_page_has_no_caveat():
    knobs = ["--seed-corpus", "300", "--backend-concurrency=3", "--reads-stat-head", "--read-delay-ms", "9.2"]
    knobs += ["--read-delay-jitter", "0.2", "--backend-stall-ms", "45", "--backend-stall-reads", "640"]
    assert target_caveat(demarkus_reads_run(knobs)) is None
    assert target_caveat(RUN_JSON) is None, "a plan that says nothing of the page's target gets no caveat"
    with pytest.raises(UsageError, match="reference target must be a mapping with embedded"):
        rows = [{"name": "FETCH", "users": 1, "rps": 5}]
        build_plan(
            {"kind": "step_ramp", "steps": [1], "step_time": "1s", "reference": {"rows": rows, "target": "fast"}},
            source="t",
        )


def test_users_axis_is_labelled_as_run_and_a_spike_does_not_flatten_the_chart():
    axis = Figure().subplots()
    axis.set_xscale("log", base=2)
    axis.plot([1, 4, 16, 64], [1, 2, 3, 4])
    label_users_as_run(axis, [1, 4, 16, 64])
    assert [t.get_text() for t in axis.get_xticklabels()] == ["1", "4", "16", "64"]
    assert readable_top(pd.Series([3.0, 3.2, 2.9, 3.1, 3.0, 214.0])) == pytest.approx(3.2 * 1.5, rel=0.2)
    assert readable_top(pd.Series([3.0, 3.2, 2.9, 3.1, 3.0, 4.0])) is None


def test_thinning_keeps_every_samples_peak_and_sources_read_as_names():
    from swarmgauge.core.verdict import Row
    from swarmgauge.reports.resources import MIB, memory_table, readable_source

    rows = [
        Row(1000.0 + t, float(t), 0, "local", "psutil:pid=7", "rss_bytes", (100 + (50 if t == 6 else 0)) * MIB, t)
        for t in range(13)
    ]
    table = memory_table(rows)
    assert len(table) == 12 and table["psutil:pid=7 rss"].max() == 150.0  # the one high sample survives thinning
    assert list(table.index[:2]) == ["0 s", "1 s"] and sum("(max)" in label for label in table.index) == 1
    assert readable_source("psutil:pidfile=/tmp/mdk-x/worker-1.pid") == "worker-1"
    assert readable_source("cgroup:/sys/fs/cgroup/x") == "cgroup:/sys/fs/cgroup/x"


def test_a_handshake_gets_no_trend_sentence_and_a_typed_name_is_not_doubled():
    from swarmgauge.reports.report import step_tables

    frame = pd.DataFrame(
        [
            {
                "step": i,
                "label": f"{u} users",
                "request_type": rtype,
                "name": name,
                "users": u,
                "target_rate": None,
                "rps": rps,
                "p50_ms": 5.0,
                "p99_ms": 9.0,
                "failures": 0,
                "generator_bound": False,
            }
            for i, (u, rps) in enumerate([(1, 100.0), (4, 400.0)])
            for rtype, name in (("QUIC", "handshake"), ("LOOKUP", "LOOKUP /"))
        ]
    )
    tables = {title: sentence for title, _table, sentence in step_tables(frame)}
    assert tables == {"QUIC handshake": None, "LOOKUP /": tables["LOOKUP /"]}
    assert tables["LOOKUP /"].startswith("Throughput rises")


def test_kneo_run_tables_say_runs_per_second_beside_the_page():
    from swarmgauge.reports.report import step_tables

    frame = pd.DataFrame(
        [
            {
                "step": 0,
                "label": "1 users",
                "request_type": "run sync",
                "name": "echo",
                "users": 1,
                "target_rate": None,
                "rps": 40.0,
                "p50_ms": 12.0,
                "p99_ms": 15.0,
                "failures": 0,
                "generator_bound": False,
            }
        ]
    )
    [(title, table, _sentence)] = step_tables(frame)
    rows = reference_rows({"plan": load_plan_file("kneo-sync-sweep").summary()})
    shown = beside_reference(table, title, rows)
    assert "runs/s" in shown and "req/s" not in shown
    assert list(shown["page runs/s"]) == ["51.0"] and list(shown["Δ runs/s"]) == ["-22 %"]
