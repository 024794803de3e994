"""The MDK report section from run-directory files: the page's colours per threshold, the overall verdict as the
worst row, Locust's counts beside the Kernel's, the drills table with READY and the first read apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmgauge.listeners.steps_csv import BASE_COLUMNS, TAIL_COLUMNS
from swarmgauge.reports import mdk
from swarmgauge.reports.report import render_report

COLUMNS = BASE_COLUMNS + TAIL_COLUMNS


def steps_csv(*rows: dict) -> str:
    lines = [",".join(COLUMNS)]
    lines += [",".join(str(row.get(column, "")) for column in COLUMNS) for row in rows]
    return "\n".join(lines) + "\n"


def write_run(
    run_dir: Path,
    *,
    headroom: float | None = 0.2,
    cpu: float = 40.0,
    ratio: float = 0.0,
    p99: float = 300.0,
    rss_slope_mib_h: float = 100.0,
    soak_s: float = 60.0,
    kernel_queued: int = 2900,
    drills: list[dict] | None = None,
) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "headroom": {"value": headroom, "by_worker": {} if headroom is None else {"worker-0": headroom}},
        "cpu_percent": {"kernel": cpu / 2, "worker-0": cpu},
        "rejected_ratio": ratio,
        "actions": {"submitted": 3000, "queued": 2900},
        "errors": {"Rejected(ERR_WORKER_NOT_ROUTABLE)": 100, "NullMetrics(metrics is null)": 3},
        "kernel": {"commands": {"QUEUED": kernel_queued}, "rejected": {"ERR_WORKER_NOT_ROUTABLE": 100}},
    }
    (run_dir / "mdk.json").write_text(json.dumps(doc))
    common = {
        "workers": 1,
        "generator_cpu_max": 20.0,
        "generator_bound": False,
        "fail_ratio": 0,
        "p90_ms": 1,
        "p999_ms": 1,
        "max_ms": 1,
        "avg_ms": 1,
        "warmup_requests": 0,
    }
    (run_dir / "steps.csv").write_text(
        steps_csv(
            {
                **common,
                "step": 0,
                "label": "action burst",
                "request_type": "MDK",
                "name": "action",
                "users": 200,
                "target_rate": 1000.0,
                "started_at": 0,
                "duration_s": 3,
                "requests": 3000,
                "failures": 100,
                "rps": 1000,
                "p50_ms": 120,
                "p99_ms": p99,
            },
            {
                **common,
                "step": 1,
                "label": "readers",
                "request_type": "MDK",
                "name": "telemetry",
                "users": 20,
                "started_at": 3,
                "duration_s": 8,
                "requests": 400,
                "failures": 0,
                "rps": 50,
                "p50_ms": 300,
                "p99_ms": 390,
            },
        )
    )
    (run_dir / "slo.json").write_text(
        json.dumps(
            {
                "verdicts": [
                    {
                        "expr": "rss_slope<=18000MiB/h",
                        "scope": "run",
                        "observed": rss_slope_mib_h * 2**20,
                        "status": "pass",
                        "colour": "green",
                    }
                ]
            }
        )
    )
    (run_dir / "run.json").write_text(json.dumps({"started_at": 1000.0, "ended_at": 1000.0 + soak_s}))
    if drills is not None:
        (run_dir / "mdk_drills.json").write_text(json.dumps({"drills": drills}))
    return run_dir


def verdicts(run_dir: Path) -> dict[str, str]:
    return mdk.section(run_dir).summary["verdicts"]


@pytest.mark.parametrize(
    "value, colour",
    [(0.2, "green"), (0.69, "green"), (0.7, "amber"), (0.99, "amber"), (1.0, "red"), (1.24, "red"), (None, "unknown")],
)
def test_headroom_colour_follows_the_page(tmp_path, value, colour):
    section = mdk.section(write_run(tmp_path, headroom=value))
    assert section.summary["headroom"]["colour"] == colour
    assert verdicts(tmp_path)["Telemetry freshness (headroom)"] == colour


def test_every_row_green_gives_a_green_overall(tmp_path):
    section = mdk.section(write_run(tmp_path))
    assert set(section.summary["verdicts"].values()) == {"green"} and section.summary["overall"] == "green"
    assert "Overall verdict: green" in section.markdown


@pytest.mark.parametrize(
    "change, row, colour",
    [
        ({"p99": 2591.0}, "Action submit p99", "red"),
        ({"cpu": 108.0}, "Steady CPU, busiest process", "red"),
        ({"ratio": 0.005}, "Rejected + timed out", "amber"),
        ({"ratio": 0.83}, "Rejected + timed out", "red"),
        ({"rss_slope_mib_h": 30000.0}, "RSS slope (max across processes)", "amber"),  # a 60 s soak makes no leak claim
        ({"rss_slope_mib_h": 30000.0, "soak_s": 25 * 3600.0}, "RSS slope (max across processes)", "red"),
    ],
)
def test_each_threshold_row_and_the_worst_row_wins(tmp_path, change, row, colour):
    section = mdk.section(write_run(tmp_path, **change))
    assert section.summary["verdicts"][row] == colour
    assert section.summary["overall"] == colour


def test_counts_beside_the_kernel_and_a_mismatch_is_shown(tmp_path):
    section = mdk.section(write_run(tmp_path / "match"))
    assert "| Rejected(ERR_WORKER_NOT_ROUTABLE) |      100 |      100 | yes" in section.markdown
    assert section.summary["actions"]["acceptance"] == [
        {"step": "action burst", "rate": 1000.0, "submits": 3000, "failures": 100, "p50_ms": 120.0, "p99_ms": 300.0}
    ]
    off = mdk.section(write_run(tmp_path / "off", kernel_queued=2899))
    assert "| QUEUED (accepted)                 |     2900 |     2899 | NO" in off.markdown


def test_drills_table_keeps_ready_and_first_read_apart(tmp_path):
    drills = [
        {
            "drill": "worker-restart",
            "component": "worker-0",
            "recovered": True,
            "ready_s": 3.4,
            "first_read_s": 4.9,
            "read_after_ready_s": 1.5,
        },
        {
            "drill": "device-outage",
            "component": "mocks",
            "recovered": True,
            "snap_failed_s": 0.03,
            "cached_failed_s": 4.7,
            "restored_s": 5.0,
            "restored_read_s": 5.35,
        },
        {
            "drill": "kernel-restart",
            "component": "kernel",
            "recovered": False,
            "ready_s": None,
            "first_read_s": None,
            "note": "not recovered within 30 s",
        },
    ]
    section = mdk.section(write_run(tmp_path, drills=drills))
    table = section.markdown.split("### Failure drills")[1]
    assert "wait for a read, not READY" in table
    assert "| worker-restart | worker-0 | 3.40 s  | 4.90 s                  | 1.50 s" in table
    assert "4.70 s" in table and "5.35 s" in table and "NO not recovered within 30 s" in table
    assert "<h3>Failure drills</h3>" in section.html


def test_drills_alone_and_nothing_at_all(tmp_path):
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "mdk_drills.json").write_text(
        json.dumps(
            {
                "drills": [
                    {
                        "drill": "kernel-restart",
                        "component": "kernel",
                        "recovered": True,
                        "ready_s": 1.0,
                        "first_read_s": 2.0,
                    }
                ]
            }
        )
    )
    section = mdk.section(tmp_path / "only")
    assert "Failure drills" in section.markdown and "verdicts" not in section.summary
    (tmp_path / "none").mkdir()
    assert mdk.section(tmp_path / "none") is None
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "mdk.json").write_text("{not json")
    assert mdk.section(tmp_path / "broken") is None


def test_the_section_is_in_the_rendered_report(tmp_path):
    run_dir = write_run(tmp_path, headroom=1.24)
    render_report(run_dir)
    report = (run_dir / "report.md").read_text()
    assert "## MDK fleet" in report and "Overall verdict: red" in report
    assert json.loads((run_dir / "summary.json").read_text())["MDK fleet"]["headroom"]["colour"] == "red"


@pytest.mark.parametrize(
    ("gateway", "says"),
    [
        ({"requests": 3215, "metrics_requests": 12}, "3,203 (the same)"),
        ({"requests": 3300, "metrics_requests": 12}, "3,288 (NOT the same)"),
        (None, "the Gateway gives no count of its own"),
    ],
)
def test_the_runs_requests_are_shown_beside_the_gateways_own_count(tmp_path, gateway, says):
    """Every request the Gateway saw is the run's (connects included) or the discovery's before it, said apart; a
    count that differs is said so, not hidden."""
    run_dir = write_run(tmp_path / "run")
    doc = json.loads((run_dir / "mdk.json").read_text())
    doc["requests"] = {"counted": 3150, "before_the_run": 3, "drill_probes": 50}
    if gateway is not None:
        doc["kernel"]["gateway"] = gateway
    (run_dir / "mdk.json").write_text(json.dumps(doc))
    section = mdk.section(run_dir)
    assert section is not None
    assert "3,150 counted by the run, 3 fleet summaries of the discovery before it" in section.markdown
    assert "50 reads the drill timed itself" in section.markdown
    assert says in section.markdown
    assert section.summary["requests"]["match"] is (None if gateway is None else gateway["requests"] == 3215)
