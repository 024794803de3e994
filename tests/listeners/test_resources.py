"""ResourceSampler in real Locust runs: samples on the workers reach the master once each; a failing source is
reported per interval and never stops the run; the generators' own RSS and CPU are recorded."""

from __future__ import annotations

import csv
import json
import os
from collections import Counter

import pytest

from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import ROOT, run_distributed, run_local, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

HTTP_RAMP = ROOT / "locustfiles" / "http_ramp.py"


def read_rows(run_dir) -> list[dict[str, str]]:
    with open(resolve(run_dir) / "resources.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_samples_on_two_workers_reach_the_master_exactly_once(tmp_path):
    with sim_target("--delay", "const:2") as target:
        result = run_distributed(
            target.url,
            "--steps",
            "2",
            "--step-time",
            "4",
            "--sample-on",
            "workers",
            "--sample",
            f"psutil:pid={os.getpid()}",
            "--sample-interval",
            "0.5",
            "--run-dir",
            str(tmp_path),
            locustfile=HTTP_RAMP,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [r for r in read_rows(tmp_path) if r["source"] == f"psutil:pid={os.getpid()}"]
    nodes = {r["node"] for r in rows}
    assert len(nodes) == 2 and "master" not in nodes and "local" not in nodes
    keys = Counter((r["node"], r["metric"], r["round"]) for r in rows)
    assert keys and max(keys.values()) == 1
    for node in nodes:
        rounds = sorted({int(r["round"]) for r in rows if r["node"] == node})
        assert rounds == list(range(rounds[0], rounds[0] + len(rounds)))  # none lost in between


def test_a_failing_source_is_counted_per_interval_and_the_run_goes_on(tmp_path):
    missing = tmp_path / "no-such.pid"
    with sim_target("--delay", "const:2") as target:
        result = run_local(
            target.url,
            "--steps",
            "1",
            "--step-time",
            "3",
            "--sample",
            f"psutil:pidfile={missing}",
            "--sample-interval",
            "0.5",
            "--run-dir",
            str(tmp_path),
            locustfile=HTTP_RAMP,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    failures = json.loads((resolve(tmp_path) / "run.json").read_text())["resources"]["source_failures"]
    assert failures.get(f"psutil:pidfile={missing}", 0) >= 2
    complaints = [line for line in result.stderr.splitlines() if "no-such.pid" in line]
    assert 0 < len(complaints) <= failures[f"psutil:pidfile={missing}"]
    generator = {r["metric"] for r in read_rows(tmp_path) if r["source"] == "generator"}
    assert {"rss_bytes", "cpu_percent"} <= generator
    machine = [r for r in read_rows(tmp_path) if r["source"] == "machine"]  # every process together, per step
    assert machine and {r["metric"] for r in machine} == {"cpu_percent"}
    assert all(0 <= float(r["value"]) <= 100 * (os.cpu_count() or 1) for r in machine)


def test_a_bad_sample_spec_stops_the_run_before_it_starts(tmp_path):
    with sim_target("--delay", "const:2") as target:
        result = run_local(
            target.url, "--steps", "1", "--step-time", "2", "--sample", "telepathy:brain", locustfile=HTTP_RAMP
        )
    assert result.returncode == 2
    assert "telepathy" in result.stderr
