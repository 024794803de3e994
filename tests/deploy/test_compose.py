"""docker-compose.yml really runs: its master and two workers as local processes, against an embedded target and
against the ``mark`` profile's target, give the plan's steps with per-step counts equal to the workers' own."""

from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest

from swarmgauge.run_folders import resolve as run_folder
from swarmgauge.targets.launch import launch_target, stop_processes
from tests.deploy.compose_local import (
    ComposeInterpolationError,
    interpolate,
    load_compose,
    option_value,
    resolve,
    with_option,
)
from tests.deploy.run_checks import WORKERS, check_run, short_plan
from tests.deploy.test_manifests import compose_schema
from tests.listeners.sim_run import free_port

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

TALLY = "tests/deploy/worker_tally.py"
RUN_SECONDS = 120


def test_interpolation_follows_compose_rules():
    shell = {"SET": "x", "EMPTY": ""}
    assert interpolate("${SET:-d} ${EMPTY:-d} ${UNSET:-d}", shell) == "x d d"
    assert interpolate("${EMPTY-d}|${UNSET-d}|$${SET}", shell) == "|d|${SET}"
    with pytest.raises(ComposeInterpolationError):
        interpolate("${UNSET}", shell)


def test_every_service_resolves_from_its_defaults(tmp_path: Path):
    document = load_compose()
    for name in document["services"]:
        service = resolve(document, name, {}, {"/runs": tmp_path})
        assert "${" not in " ".join(service.argv) + " ".join(service.environment.values()), name


def _run(document: dict, shell: dict[str, str], tmp_path: Path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """The master and WORKERS workers as compose would start them, on a free master port; returns the tallies."""
    mounts = {"/runs": tmp_path / "runs"}
    master = resolve(document, "master", shell, mounts)
    worker = resolve(document, "worker", shell, mounts)
    assert master.environment["LOCUST_EXPECT_WORKERS"] == str(WORKERS)
    assert option_value(worker.argv, "--master-host") == "127.0.0.1"  # the service name `master`, mapped
    tallies = tmp_path / "tallies"
    tallies.mkdir()
    port = str(free_port())
    master_process = master.start(
        ["--master-bind-host", "127.0.0.1", "--master-bind-port", port],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    worker_env = {"SWARMGAUGE_TEST_TALLY_DIR": str(tallies)}
    workers = []
    for _ in range(WORKERS):
        worker.environment.update(worker_env)
        workers.append(worker.start(["--master-port", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        stdout, stderr = master_process.communicate(timeout=RUN_SECONDS)
        for process in workers:
            process.wait(timeout=30)
    finally:
        stop_processes([master_process, *workers], grace=0)
    result = subprocess.CompletedProcess(master_process.args, master_process.returncode, stdout, stderr)
    return result, [json.loads(p.read_text()) for p in sorted(tallies.glob("worker-*.json"))]


def _defaults(document: dict) -> dict[str, str]:
    return resolve(document, "master", {}, {}).environment


def test_master_and_two_workers_run_the_plan_against_an_embedded_target(tmp_path: Path):
    """No profile and ``LOCUST_HOST=`` (empty): the master starts the locustfile's embedded Mark server."""
    document = load_compose()
    jsonschema.validate(document, compose_schema())
    defaults = _defaults(document)
    shell = {
        "LOCUST_HEADLESS": "true",
        "SWARMGAUGE_RUN_NAME": "embedded",
        "LOCUST_HOST": "",
        "SWARMGAUGE_PLAN": str(short_plan(tmp_path, "1s")),
        "LOCUST_LOCUSTFILE": f"{defaults['LOCUST_LOCUSTFILE']},{TALLY}",
    }
    result, tallies = _run(document, shell, tmp_path)
    check_run(result, tallies, tmp_path / "runs" / "embedded")
    assert "started the embedded mark" in result.stderr


def test_master_and_two_workers_run_the_plan_against_the_mark_profile(tmp_path: Path):
    """``--profile mark``: the mark service's own command starts the target; its served count is the steps' sum."""
    document = load_compose()
    jsonschema.validate(document, compose_schema())
    mark = document["services"]["mark"]
    assert mark["profiles"] == ["mark"]
    target_argv = resolve(document, "mark", {}, {}).argv
    target_args = target_argv[target_argv.index("mark") + 1 :]
    default_host = urlsplit(_defaults(document)["LOCUST_HOST"])
    assert default_host.scheme == "mark" and default_host.port == int(option_value(target_args, "--port")), (
        "the default host is the mark service"
    )
    with launch_target("mark", [*with_option(target_args, "--port", "0"), "--max-seconds", "300"]) as target:
        shell = {
            "LOCUST_HEADLESS": "true",
            "SWARMGAUGE_RUN_NAME": "mark",
            "LOCUST_HOST": default_host._replace(netloc=urlsplit(target.url).netloc).geturl(),
            "SWARMGAUGE_PLAN": str(short_plan(tmp_path, "0s")),
            "LOCUST_LOCUSTFILE": f"{_defaults(document)['LOCUST_LOCUSTFILE']},{TALLY}",
        }
        result, tallies = _run(document, shell, tmp_path)
        target.process.terminate()
        target.process.wait(timeout=15)
        log = target.stderr_tail(20000)
    rows = check_run(result, tallies, tmp_path / "runs" / "mark")
    assert "started the embedded" not in result.stderr
    served = re.search(r"served (\d+) requests", log)
    assert served, log[-2000:]
    with open(run_folder(tmp_path / "runs" / "mark") / "steps.csv", newline="") as handle:
        fetches = sum(int(r["requests"]) for r in csv.DictReader(handle) if r["request_type"] == "FETCH")
    assert int(served.group(1)) == fetches
    assert fetches < sum(int(r["requests"]) for r in rows.values()), "handshakes are counted apart"
