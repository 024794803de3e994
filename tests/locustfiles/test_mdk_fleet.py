"""locustfiles/mdk_fleet.py as people run it: real headless Locust against the embedded MDK stand-in (its own
processes). The burst of 1,000 submits/s for 3 s is counted exactly (Locust's QUEUED equal the Kernel's); a Worker
killed mid-burst shows as Rejected(ERR_WORKER_NOT_ROUTABLE) in the failures table and the report; a read sweep gives
a headroom figure and its colour; a drill run from the plan lands in the report's "Failure drills" table."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT

LOCUSTFILE = REPO_ROOT / "locustfiles" / "mdk_fleet.py"
BURST = 3000  # 1,000 submits/s for 3 s
pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def locust(*args: str, timeout: float = 100) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--sample-interval", "1", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        cwd=REPO_ROOT,
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def burst_row(run_dir: Path) -> dict[str, str]:
    rows = [
        r for r in read_csv(resolve(run_dir) / "steps.csv") if r["label"] == "action burst" and r["name"] == "action"
    ]
    assert len(rows) == 1
    return rows[0]


def mdk_doc(run_dir: Path) -> dict:
    return json.loads((resolve(run_dir) / "mdk.json").read_text())


def test_a_burst_of_1000_submits_a_second_for_3_s_is_counted_exactly(tmp_path):
    run_dir = tmp_path / "burst"
    result = locust("--mdk-scenario", "burst", "--mdk-profile", "50x1", "--run-dir", str(run_dir))
    assert result.returncode in (0, 3), result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    row = burst_row(run_dir)
    assert int(row["tickets"]) == BURST
    assert int(row["requests"]) + int(row["dropped"]) == BURST  # every ticket a submit, or counted as dropped
    assert int(row["failures"]) == 0
    doc = mdk_doc(run_dir)
    assert doc["actions"]["submitted"] == int(row["requests"])
    assert doc["actions"]["queued"] == doc["kernel"]["commands"]["QUEUED"] == int(row["requests"])
    summary = json.loads((resolve(run_dir) / "summary.json").read_text())["MDK fleet"]
    acceptance = summary["actions"]["acceptance"]
    assert [a["submits"] for a in acceptance] == [int(row["requests"])]
    assert 0 < acceptance[0]["p50_ms"] <= acceptance[0]["p99_ms"]
    report = (resolve(run_dir) / "report.md").read_text()
    assert "| QUEUED (accepted)" in report and "acceptance p50" in report
    # every request the Gateway saw is counted: the burst users' connects by their own name, outside the burst's row;
    # the discovery's summaries before the load are said apart; the sampler's /metrics reads are no load
    rows = read_csv(resolve(run_dir) / "steps.csv")
    connects = sum(int(r["requests"]) for r in rows if r["name"] == "connect")
    assert connects == 200  # one per burst user (the 199 spawned at the burst's start connect in it, by that name)
    total = sum(int(r["requests"]) for r in rows if r["name"] == "Aggregated")
    assert doc["requests"]["counted"] == total
    before = json.loads((resolve(run_dir) / "run.json").read_text())["mdk_discovered_before_load"]
    assert doc["requests"]["before_the_run"] == before["requests_before_the_run"] >= 1
    gateway = doc["kernel"]["gateway"]
    assert gateway["requests"] - gateway["metrics_requests"] == total + doc["requests"]["before_the_run"]


def test_a_worker_killed_mid_burst_shows_as_rejections_in_the_failures_table_and_the_report(tmp_path):
    run_dir = tmp_path / "restart"
    result = locust(
        "--mdk-scenario",
        "burst",
        "--mdk-profile",
        "50x2",
        "--run-dir",
        str(run_dir),
        "--mdk-drill",
        "worker-restart",
        "--mdk-drill-step",
        "1",
        "--mdk-drill-after",
        "0s",  # armed by the drill's own good read (~0.3 s), so the kill lands while the burst is still going
        "--mdk-embedded-args",
        # the restarted Worker boots for 1 s before it listens (as the page's Node.js ones take seconds), so a ping
        # every 0.2 s surely meets its closed port: a bare restart is back in 0.1-0.3 s, and whether a ping fell in
        # that window was chance once the Kernel's lane kept up with the burst
        "--health-ping-s 0.2 --restart-boot-s 1",
    )
    assert result.returncode in (0, 3), result.stderr[-3000:]
    failures = read_csv(resolve(run_dir) / "locust_failures.csv")
    rejected = [r for r in failures if r["Error"] == "Rejected(ERR_WORKER_NOT_ROUTABLE)"]
    assert rejected and {r["Name"] for r in failures} == {"action"}
    assert {r["Error"] for r in failures} == {"Rejected(ERR_WORKER_NOT_ROUTABLE)"}
    count = sum(int(r["Occurrences"]) for r in rejected)
    row = burst_row(run_dir)
    assert int(row["failures"]) == count and int(row["requests"]) + int(row["dropped"]) == BURST
    doc = mdk_doc(run_dir)
    assert doc["kernel"]["rejected"] == {"ERR_WORKER_NOT_ROUTABLE": count}
    assert doc["kernel"]["commands"]["QUEUED"] == int(row["requests"]) - count
    slo = {v["expr"]: v for v in json.loads((resolve(run_dir) / "slo.json").read_text())["verdicts"]}
    ratio = slo["mdk_rejected_ratio<0.01"]
    assert ratio["observed"] == pytest.approx(count / int(row["requests"]))
    assert (ratio["status"] == "fail") == (ratio["observed"] >= 0.01) == (result.returncode == 3)
    report = (resolve(run_dir) / "report.md").read_text()
    failures_part = report.split("## Errors by class")[1].split("## MDK fleet")[0]
    assert "Rejected" in failures_part and "action" in failures_part
    mdk_part = report.split("## MDK fleet")[1]
    assert f"| Rejected(ERR_WORKER_NOT_ROUTABLE) | {count:>8} | {count:>8} | yes" in mdk_part
    drills = mdk_part.split("### Failure drills")[1]
    assert "| READY " in drills and "| first successful read " in drills and "| worker-restart | worker-0 " in drills
    saved = json.loads((resolve(run_dir) / "mdk_drills.json").read_text())["drills"]
    # READY and the first good read are two polls of their own; under load either may see its event first
    assert saved[0]["recovered"] and saved[0]["ready_s"] > 0 and saved[0]["first_read_s"] > 0
    # the drill's own reads through the Gateway are said beside the run's count, so the Gateway's count is still met
    assert saved[0]["probe_reads"] >= 2 and doc["requests"]["drill_probes"] == saved[0]["probe_reads"]
    gateway = doc["kernel"]["gateway"]
    sent = doc["requests"]["counted"] + doc["requests"]["before_the_run"] + doc["requests"]["drill_probes"]
    assert gateway["requests"] - gateway["metrics_requests"] == sent


@pytest.mark.parametrize(
    "profile, knobs, colour",
    [
        ("50x1", "--cache-s 2", "green"),
        ("100x1", "--collect-interval-s 1 --query-concurrency 10", "red"),
    ],
)
def test_a_read_sweep_gives_a_headroom_figure_and_its_colour(tmp_path, profile, knobs, colour):
    run_dir = tmp_path / "reads"
    drill = ["--mdk-drill", "device-outage", "--mdk-drill-after", "2s"] if colour == "green" else []
    result = locust(
        "--mdk-scenario",
        "reads",
        "--mdk-readers",
        "20",
        "--mdk-read-time",
        "8s",
        "--mdk-profile",
        profile,
        "--mdk-embedded-args",
        knobs,
        "--run-dir",
        str(run_dir),
        *drill,
    )
    assert result.returncode in (0, 1, 3), result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    headroom = json.loads((resolve(run_dir) / "summary.json").read_text())["MDK fleet"]["headroom"]
    assert headroom["value"] is not None and headroom["colour"] == colour
    assert (headroom["value"] < 0.7) if colour == "green" else (headroom["value"] >= 1.0)
    slo = {v["expr"]: v for v in json.loads((resolve(run_dir) / "slo.json").read_text())["verdicts"]}
    assert slo["headroom<1"]["status"] == ("pass" if colour == "green" else "fail")
    assert "MDK:action:p99<=2000ms" not in slo and "mdk_rejected_ratio<0.01" not in slo  # readers send no actions
    report = (resolve(run_dir) / "report.md").read_text()
    assert f"| Telemetry freshness (headroom)   | {headroom['value']:.3f}" in report
    reads = [r for r in read_csv(resolve(run_dir) / "steps.csv") if r["name"] == "telemetry"]
    assert reads and int(reads[0]["requests"]) > 0
    if drill:
        outage = json.loads((resolve(run_dir) / "mdk_drills.json").read_text())["drills"][0]
        assert outage["drill"] == "device-outage" and outage["recovered"]
        assert outage["device_set_aside"] is True  # the readers left the timed device to the drill
        assert outage["snap_failed_s"] <= outage["cached_failed_s"] < outage["restored_read_s"]
        assert "| device-outage" in report.split("### Failure drills")[1]
        errors = {r["Error"] for r in read_csv(resolve(run_dir) / "locust_failures.csv")}
        assert "MetricError(snap: ECONNREFUSED)" in errors  # readers saw the refused devices as named failures


@pytest.mark.parametrize(
    "args, says",
    [
        (["--mdk-profile", "lots"], "--mdk-profile"),
        (["--host", "http://127.0.0.1:9", "--mdk-drill", "kernel-restart"], "--mdk-drill needs the stand-in's root"),
        (["--mdk-readers", "0"], "--mdk-readers"),
        (["--mdk-burst-users", "0"], "--mdk-burst-users"),
        (["--mdk-one-at-a-time-mix", "reads=3"], "--mdk-one-at-a-time-mix: want NAME=N"),
    ],
)
def test_bad_options_stop_the_run_in_one_line(args, says):
    result = locust("-t", "2s", *args, timeout=60)
    assert result.returncode == 2
    assert "swarmgauge: " in result.stderr and says in result.stderr


@pytest.mark.parametrize("name", ["mdk-reads", "mdk-benchmark", "mdk-burst"])
def test_the_bundled_mdk_plans_name_users_of_this_locustfile(name):
    from swarmgauge.plans.plan import load_plan_file

    source = LOCUSTFILE.read_text()
    plan = load_plan_file(name)
    for stage in plan.stages:
        for user_class in stage.user_classes or ():
            assert f"class {user_class}(" in source
