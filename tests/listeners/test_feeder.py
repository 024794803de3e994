"""``--feeder`` in real Locust runs against a real ``targets/sim_http.py``, read back from the target's own record.

The locustfile (``feeder_locustfile.py``) sends each row's ``row_id`` as the request's ``id``; the target records the
``id`` of every request it served, so "each row used once" is what the target saw, not what the feeder counted.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import run_distributed, run_local, sim_target, start_distributed

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

LOCUSTFILE = Path(__file__).resolve().parent / "feeder_locustfile.py"
NO_SHAPE = {"FEEDER_NO_SHAPE": "1"}


def _csv(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "rows.csv"
    path.write_text("row_id,note\n" + "".join(f"r{i},n{i}\n" for i in range(count)))
    return path


def _swarmgauge_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("swarmgauge:")]


def _served_ids(target) -> Counter:
    """How often the target served each row (its record's ``id`` is ``<row_id>@<pid>``)."""
    return Counter(str(record["id"]).split("@")[0] for record in target.records())


def _run_json(run_dir: Path) -> dict:
    return json.loads((resolve(run_dir) / "run.json").read_text())


def test_distributed_unique_rows_are_each_served_once_across_two_workers(tmp_path):
    count = 300
    rows = _csv(tmp_path, count)
    run_dir = tmp_path / "run"
    with sim_target() as target:
        result = run_distributed(
            target.url,
            "--feeder",
            str(rows),
            "--feeder-mode",
            "unique",
            "--feeder-batch",
            "7",
            "--steps",
            "4",
            "--step-time",
            "120s",
            "--run-dir",
            str(run_dir),
            locustfile=LOCUSTFILE,
            timeout=120,
        )
        served = _served_ids(target)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "none" not in served, "a user ran without a row"
    assert served == Counter({f"r{i}": 1 for i in range(count)})
    info = _run_json(run_dir)["feeder"]
    assert info["mode"] == "unique" and info["rows"] == count and info["dealt"] == count
    assert len(info["workers"]) == 2 and all(w["sent"] > 0 for w in info["workers"].values())
    assert sum(w["sent"] for w in info["workers"].values()) == count
    assert "feeder rows ran out" in info["stopped"]["reason"]
    assert f"swarmgauge: run stopped: feeder rows ran out: {rows}: {count} rows, each used once" in result.stderr


def test_distributed_shared_stop_gives_each_worker_one_pass_then_ends_the_run(tmp_path):
    count = 30
    rows = _csv(tmp_path, count)
    with sim_target() as target:
        result = run_distributed(
            target.url,
            "--feeder",
            str(rows),
            "--feeder-exhausted",
            "stop",
            "--steps",
            "4",
            "--step-time",
            "120s",
            locustfile=LOCUSTFILE,
            timeout=120,
        )
        by_worker: dict[str, Counter] = {}
        for record in target.records():
            row_id, pid = str(record["id"]).split("@")
            by_worker.setdefault(pid, Counter())[row_id] += 1
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(by_worker) == 2
    assert all(served == Counter({f"r{i}": 1 for i in range(count)}) for served in by_worker.values())
    assert f"one pass over {count} rows" in result.stderr


def test_local_unique_stop_without_a_shape_ends_the_run_with_every_row_once(tmp_path):
    count = 40
    rows = _csv(tmp_path, count)
    run_dir = tmp_path / "run"
    with sim_target() as target:
        result = run_local(
            target.url,
            "--feeder",
            str(rows),
            "--feeder-mode",
            "unique",
            "-u",
            "3",
            "-r",
            "3",
            "--run-time",
            "90s",
            "--run-dir",
            str(run_dir),
            locustfile=LOCUSTFILE,
            env=NO_SHAPE,
            timeout=80,
        )
        served = _served_ids(target)
    assert result.returncode == 0, result.stderr[-2000:]
    assert served == Counter({f"r{i}": 1 for i in range(count)})
    info = _run_json(run_dir)["feeder"]
    assert info["used"] == count and "each used once" in info["stopped"]["reason"]


def test_shared_recycle_goes_round_the_rows_in_order_again(tmp_path):
    count = 5
    rows = _csv(tmp_path, count)
    with sim_target() as target:
        result = run_local(
            target.url,
            "--feeder",
            str(rows),
            "-u",
            "1",
            "--run-time",
            "3s",
            locustfile=LOCUSTFILE,
            env=NO_SHAPE,
        )
        ids = [str(record["id"]).split("@")[0] for record in target.records()]
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(ids) > 2 * count
    assert ids == [f"r{i % count}" for i in range(len(ids))]


def test_shared_stop_ends_a_local_run_after_one_pass(tmp_path):
    count = 6
    rows = _csv(tmp_path, count)
    with sim_target() as target:
        result = run_local(
            target.url,
            "--feeder",
            str(rows),
            "--feeder-exhausted",
            "stop",
            "-u",
            "2",
            "--steps",
            "2",
            "--step-time",
            "120s",
            locustfile=LOCUSTFILE,
            timeout=80,
        )
        served = _served_ids(target)
    assert result.returncode == 0, result.stderr[-2000:]
    assert served == Counter({f"r{i}": 1 for i in range(count)})
    assert "one pass over 6 rows" in result.stderr


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("rows.csv", "row_id,note\nr0,n0\nr1\n", "rows.csv:3: 1 fields, the header has 2"),
        ("rows.jsonl", '{"row_id": "r0"}\n[1, 2]\n', "rows.jsonl:2: not a JSON object (list)"),
        ("rows.csv", "id,note\nr0,n0\n", "rows.csv:1: no column 'row_id', which FedUser takes (has: id, note)"),
    ],
)
def test_bad_feeder_file_exits_2_with_one_line_naming_file_and_line(tmp_path, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    result = run_local(
        "http://127.0.0.1:9", "--feeder", str(path), "--run-time", "5s", locustfile=LOCUSTFILE, timeout=60
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert _swarmgauge_lines(result.stderr) == [f"swarmgauge: {path.parent}/{expected}"]
    assert "Traceback" not in result.stderr


def test_missing_feeder_file_exits_2_before_load(tmp_path):
    missing = tmp_path / "nope.csv"
    result = run_local("http://127.0.0.1:9", "--feeder", str(missing), locustfile=LOCUSTFILE, timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    assert _swarmgauge_lines(result.stderr) == [f"swarmgauge: feeder file {missing}: no such file"]
    assert "Traceback" not in result.stderr


def test_unique_recycle_uses_every_row_once_per_pass(tmp_path):
    count = 7
    rows = _csv(tmp_path, count)
    with sim_target() as target:
        result = run_local(
            target.url,
            "--feeder",
            str(rows),
            "--feeder-mode",
            "unique",
            "--feeder-exhausted",
            "recycle",
            "-u",
            "3",
            "--run-time",
            "3s",
            locustfile=LOCUSTFILE,
            env=NO_SHAPE,
        )
        served = _served_ids(target)
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(served) == {f"r{i}" for i in range(count)}
    assert min(served.values()) >= 2 and max(served.values()) - min(served.values()) <= 1


def test_a_lost_workers_rows_are_not_reissued_and_run_json_names_them(tmp_path):
    rows = _csv(tmp_path, 100_000)
    run_dir = tmp_path / "run"
    args = ("--feeder", str(rows), "--feeder-mode", "unique", "--feeder-batch", "50", "--steps", "4")
    with sim_target() as target:
        with start_distributed(
            target.url, *args, "--step-time", "16s", "--run-dir", str(run_dir), locustfile=LOCUSTFILE, grace=0
        ) as run:
            master, (victim, survivor) = run.master, run.workers
            deadline = time.monotonic() + 60
            while not any(str(r["id"]).endswith(f"@{victim.pid}") for r in target.records()):
                assert time.monotonic() < deadline and master.poll() is None, "the victim never sent a row"
                time.sleep(0.5)
            time.sleep(2)
            victim.send_signal(signal.SIGKILL)
            _stdout, stderr = master.communicate(timeout=120)
        records = target.records()

    by_pid: dict[str, list[str]] = {}
    for record in records:
        row_id, pid = str(record["id"]).split("@")
        by_pid.setdefault(pid, []).append(row_id)
    served = Counter(row_id for ids in by_pid.values() for row_id in ids)
    assert served and max(served.values()) == 1, "no row was served twice"
    assert not set(by_pid[str(victim.pid)]) & set(by_pid[str(survivor.pid)])
    info = _run_json(run_dir)["feeder"]
    [(lost_id, lost)] = info["lost"].items()
    assert lost["not_reissued"] is True and lost["sent"] >= lost["used_at_last_report"]
    assert lost["sent"] >= len(by_pid[str(victim.pid)]) > 0
    assert info["dealt"] == sum(w["sent"] for w in info["workers"].values())
    assert info["dealt"] >= len(served), stderr[-2000:]
    assert "feeder rows held by lost workers are not reissued" in stderr
