"""--prometheus-push and --prometheus-remote-write against Debian's real Pushgateway and Prometheus on loopback.

A short headless run (two steps) against the real sim-http target pushes to both; PromQL then reads back the run's
total requests and each step's ``histogram_quantile(0.99, ...)``, which must equal ``steps.csv`` (the p99 within the
width of the bucket it falls in). The Pushgateway's copy is read through Prometheus scraping it (``job="pushgateway"``,
the pushed job kept as ``exported_job``); remote-write's copy carries ``job="swarmgauge"``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from swarmgauge.core import run_files
from swarmgauge.listeners.prom_histogram import bucket_width
from swarmgauge.run_folders import resolve
from tests.deploy.grafana_dashboard import expressions, load, runnable
from tests.listeners.prom_servers import PromServers, missing, prom_servers
from tests.listeners.sim_run import free_port, read_steps, run_distributed, run_local, sim_target

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]

PLAN = ("--steps", "4,12", "--step-time", "4", "--stop-timeout", "10")
DELAY = "lognormal:5:0.6"  # milliseconds: hundreds of requests per step, a tail for the p99
SCRAPED_SECONDS = 20.0
USER, PASSWORD = "sgpush", "pr0m-s3cret-pw"
LOCUSTFILE = Path(__file__).resolve().parent / "prom_push_locustfile.py"


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> PromServers:
    with prom_servers(tmp_path_factory.mktemp("prom")) as running:
        yield running


def _with_credentials(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@", 1)


def _eventually(servers: PromServers, promql: str, expected: float) -> float | None:
    """The query's value once it equals ``expected`` (the Pushgateway is scraped each second), or the last one seen."""
    deadline = time.monotonic() + SCRAPED_SECONDS
    value = servers.scalar(promql)
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.5)
        value = servers.scalar(promql)
    return value


def _check_against_steps(servers: PromServers, run_dir: Path, job: str) -> None:
    folder = resolve(run_dir)
    rows = [row for row in read_steps(run_dir) if row["name"] != "Aggregated"]
    assert rows, "steps.csv has no request rows"
    selector = f'job="{job}",run="{folder.name}"'
    total = sum(int(row["requests"]) for row in rows)
    assert _eventually(servers, f"sum(swarmgauge_requests_total{{{selector}}})", float(total)) == total
    for row in rows:
        step = row["step"]
        assert int(row["requests"]) >= 50, f"step {step}: too few requests for a p99 worth comparing"
        p99 = servers.scalar(
            f'histogram_quantile(0.99, sum by (le) (swarmgauge_request_duration_seconds_bucket{{{selector},step="{step}"}}))'
        )
        assert p99 is not None, f"no histogram for step {step} ({job})"
        csv_p99 = float(row["p99_ms"]) / 1000.0
        assert abs(p99 - csv_p99) <= bucket_width(csv_p99), (
            f"{job} step {step}: histogram_quantile {p99 * 1000:.3f} ms, steps.csv {csv_p99 * 1000:.3f} ms, "
            f"bucket width {bucket_width(csv_p99) * 1000:.3f} ms (load average {os.getloadavg()[0]:.1f})"
        )
        count = servers.scalar(f'sum(swarmgauge_request_duration_seconds_count{{{selector},step="{step}"}})')
        assert count == int(row["requests"])


def _runs(servers: PromServers) -> set[str]:
    return {series["metric"].get("run", "") for series in servers.query("count by (run) (swarmgauge_current_step)")}


def _check_dashboard_queries(servers: PromServers, run_dir: Path) -> None:
    """Every query of the Grafana dashboard runs on the real Prometheus; its p99 panel has each step of the run."""
    run = resolve(run_dir).name
    for expr in expressions(load()):
        if "label_values" not in expr:
            servers.query(runnable(expr, run))
    (p99_per_step,) = [e for e in expressions(load()) if e.startswith("histogram_quantile(0.99, sum by (step, le)")]
    shown = {series["metric"]["step"] for series in servers.query(runnable(p99_per_step, run))}
    assert shown == {row["step"] for row in read_steps(run_dir) if row["name"] != "Aggregated"}


@pytest.mark.parametrize("mode", ["local", "distributed"])
def test_pushed_and_remote_written_totals_and_p99_equal_steps_csv(servers, tmp_path, mode):
    run_dir = tmp_path / "runs"
    runner = run_local if mode == "local" else run_distributed
    runs_before = _runs(servers)
    with sim_target("--delay", DELAY, "--seed", "3") as target:
        result = runner(
            target.url,
            *PLAN,
            "--run-dir",
            str(run_dir),
            "--prometheus-push",
            _with_credentials(servers.pushgateway_url),
            "--prometheus-remote-write",
            _with_credentials(servers.remote_write_url),
            "--prometheus-push-interval",
            "2s",
            locustfile=LOCUSTFILE,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "push to" not in result.stderr, result.stderr[-3000:]
    _check_against_steps(servers, run_dir, "swarmgauge")
    _check_against_steps(servers, run_dir, "pushgateway")
    assert _runs(servers) - runs_before == {resolve(run_dir).name}  # the master alone pushed: no worker's own run
    _check_dashboard_queries(servers, run_dir)
    info = json.loads((resolve(run_dir) / "run.json").read_text())
    assert set(info) <= set(run_files.names(run_files.RUN_JSON)), "a run.json key the reference does not list"
    assert info["prometheus_push"]["pushgateway"]["failures"] == {}
    assert info["prometheus_push"]["remote-write"]["pushes"] >= 2  # at least one on the timer and the last one
    for text in (result.stdout, result.stderr, *(p.read_text() for p in resolve(run_dir).glob("*.json"))):
        assert PASSWORD not in text


def test_a_failing_push_is_counted_and_logged_once_per_kind_and_the_run_goes_on(servers, tmp_path):
    run_dir = tmp_path / "runs"
    closed = f"http://{USER}:{PASSWORD}@127.0.0.1:{free_port()}/api/v1/write"
    with sim_target("--delay", DELAY) as target:
        result = run_local(
            target.url,
            *PLAN,
            "--run-dir",
            str(run_dir),
            "--prometheus-push",
            f"{servers.prometheus_url}/no-such-gateway",
            "--prometheus-remote-write",
            closed,
            "--prometheus-push-interval",
            "1s",
            locustfile=LOCUSTFILE,
        )
        served = len(target.records())
    assert result.returncode == 0, result.stderr[-3000:]
    assert served > 0
    assert result.stderr.count("pushgateway push to") == 1, result.stderr[-3000:]
    assert result.stderr.count("remote-write push to") == 1, result.stderr[-3000:]
    assert PASSWORD not in result.stderr
    record = json.loads((resolve(run_dir) / "run.json").read_text())["prometheus_push"]
    assert record["pushgateway"]["failures"] == {"HTTP 404": record["pushgateway"]["pushes"]}
    assert list(record["remote-write"]["failures"]) == ["ConnectionError"]
    assert record["remote-write"]["pushes"] >= 3
    assert PASSWORD not in json.dumps(record)


@pytest.mark.parametrize(
    "args",
    [
        ("--prometheus-push", "ftp://127.0.0.1:9091"),
        ("--prometheus-remote-write", "127.0.0.1:9090/api/v1/write"),
        ("--prometheus-push", "http://127.0.0.1:notaport"),
        ("--prometheus-push", "http://127.0.0.1:9091", "--prometheus-push-interval", "0s"),
    ],
)
def test_a_bad_push_option_is_exit_2_with_one_line_before_any_load(tmp_path, args):
    with sim_target() as target:
        result = run_local(target.url, *PLAN, *args, locustfile=LOCUSTFILE)
        served = len(target.records())
    assert result.returncode == 2, result.stderr[-3000:]
    assert [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert served == 0
