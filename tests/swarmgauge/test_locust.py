"""``import swarmgauge.locust`` in a worker: pandas, numpy, matplotlib and plotly stay out of it.

Every Locust process imports the module; only the master and the local runner render a report or a summary, so only
they may load the report's libraries (52 MiB of resident memory per worker process otherwise).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from tests import REPO_ROOT
from tests.listeners.sim_run import run_distributed, sim_target

HEAVY = ("pandas", "numpy", "matplotlib", "plotly")
BUNDLED_LOCUSTFILES = sorted(
    path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "locustfiles").glob("[a-z]*.py")
)
RECORDING_LOCUSTFILE = Path(__file__).resolve().parent / "worker_modules_locustfile.py"

WORKER_IMPORTS = """
import json, sys
import locust
import swarmgauge.locust
import swarmgauge.api
from locust.argument_parser import get_parser
from locust.util.load_locustfile import load_locustfile
load_locustfile(sys.argv[1])
get_parser().parse_args(["-f", sys.argv[1], "--worker"])
heavy = sorted(name for name in sys.modules if name.split(".")[0] in {heavy})
remote_write = sorted(name for name in ("google.protobuf", "cramjam") if name in sys.modules)
print(json.dumps({{"heavy": heavy, "cryptography": "cryptography" in sys.modules, "remote_write": remote_write}}))
"""


def test_the_bundled_locustfiles_are_all_checked():
    assert "locustfiles/demarkus_reads.py" in BUNDLED_LOCUSTFILES and len(BUNDLED_LOCUSTFILES) >= 8


@pytest.mark.parametrize("locustfile", BUNDLED_LOCUSTFILES)
def test_what_a_worker_imports_loads_no_report_library_and_no_cryptography(locustfile: str):
    """A worker's imports: Locust, swarmgauge's listeners and options, the api, a bundled locustfile, the parser.

    Nor cryptography (8 MiB): a worker starts no embedded server and its MarkUser on qh3 makes no certificate."""
    result = subprocess.run(
        [sys.executable, "-c", WORKER_IMPORTS.format(heavy=set(HEAVY)), locustfile],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert loaded["heavy"] == []
    assert loaded["cryptography"] is False, "certificates are made by a server (the master's embedded target)"
    assert loaded["remote_write"] == [], "protobuf and snappy load with the first remote-write body, not the listeners"


@pytest.mark.integration
def test_a_worker_ends_its_run_without_them_while_the_master_writes_the_report(tmp_path: Path):
    records = tmp_path / "modules"
    records.mkdir()
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:2") as target:
        result = run_distributed(
            target.url,
            "--steps",
            "2",
            "--step-time",
            "3s",
            "--warmup",
            "0s",
            "--stop-timeout",
            "5",
            "--run-dir",
            str(run_dir),
            workers=1,
            locustfile=RECORDING_LOCUSTFILE,
            env={"MODULES_RECORD_DIR": str(records)},
        )
        served = target.records()
    assert result.returncode == 0, result.stderr[-3000:]
    assert served, "the worker sent load"
    assert (resolve(run_dir) / "report.md").is_file()

    loaded = {path.name.split("-")[0]: json.loads(path.read_text()) for path in records.glob("*.json")}
    assert sorted(loaded) == ["MasterRunner", "WorkerRunner"], sorted(loaded)
    assert loaded["WorkerRunner"] == []
    assert "pandas" in loaded["MasterRunner"], "the master renders the report (and proves the record sees imports)"
    assert "plotly" in loaded["MasterRunner"], "report.html's charts are drawn by the master"


SPAWN_ONE = """
import json, gevent, swarmgauge.locust
glet = gevent.spawn(lambda: None)
glet.join()
print(json.dumps({"stack": glet.spawning_stack is not None, "spawner": glet.spawning_greenlet is not None}))
"""


def _spawned_greenlet_records(extra_env: dict[str, str]) -> dict[str, bool]:
    env = {key: value for key, value in os.environ.items() if key != "GEVENT_TRACK_GREENLET_TREE"}
    result = subprocess.run(
        [sys.executable, "-c", SPAWN_ONE],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, **extra_env},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(json.loads(result.stdout.splitlines()[-1]))


def test_a_greenlet_spawned_after_the_import_keeps_no_record_of_its_spawner():
    """gevent's spawning-tree records cost every Locust user ~340 B for the run; only gevent's debug dumps read them."""
    assert _spawned_greenlet_records({}) == {"stack": False, "spawner": False}


def test_gevents_own_variable_still_turns_the_records_on():
    assert _spawned_greenlet_records({"GEVENT_TRACK_GREENLET_TREE": "1"}) == {"stack": True, "spawner": True}
