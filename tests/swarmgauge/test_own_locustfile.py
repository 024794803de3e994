"""The README's "Your own locustfile" examples, run as a user would: from a project folder of their own that has
its own ``users/`` and ``reports/`` packages and a ``users.py``, headless with ``--run-dir`` and ``--slo``."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import launch_target
from tests import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

README = REPO_ROOT / "README.md"
RUN_SECONDS = 120
PASSING = {"http": "fail_ratio<0.01", "mark": "LIST:p99<5000ms"}
FAILING = "requests<1"


def readme_example(kind: str) -> str:
    """The python block of the README section whose first line is ``# locustfile.py: ...`` for ``kind``."""
    section = README.read_text().split("## Your own locustfile", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    marker = {"http": "your own HTTP service", "mark": "a Mark server"}[kind]
    found = [block for block in blocks if marker in block.splitlines()[0]]
    assert len(found) == 1, f"README has no single {kind} example"
    return found[0]


def own_project(root: Path, locustfile: str) -> Path:
    """A user's project: the locustfile beside packages named like ours, which must not shadow swarmgauge's."""
    for package in ("users", "reports"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text(
            f'"""The project\'s own {package}."""\nOWN_{package.upper()} = True\n'
        )
    (root / "users.py").write_text('"""A module named like our users package."""\nOWN = True\n')
    (root / "locustfile.py").write_text(locustfile)
    return root / "locustfile.py"


def run_locust(locustfile: Path, host: str, run_dir: Path, slo: str, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            locustfile.name,
            "--headless",
            "--only-summary",
            "--host",
            host,
            "--run-dir",
            str(run_dir),
            "--slo",
            slo,
            *extra,
        ],
        cwd=locustfile.parent,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        env=env,
    )


def steps_rows(run_dir: Path) -> list[dict[str, str]]:
    with open(resolve(run_dir) / "steps.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def check_pass_and_fail(tmp_path: Path, kind: str, host: str, *extra: str) -> None:
    locustfile = own_project(tmp_path / "project", readme_example(kind))
    passing = run_locust(locustfile, host, tmp_path / "pass", PASSING[kind], *extra)
    assert passing.returncode == 0, passing.stderr[-3000:]
    rows = steps_rows(tmp_path / "pass")
    assert {row["step"] for row in rows} >= {"0", "1"}, rows
    failing = run_locust(locustfile, host, tmp_path / "fail", FAILING, *extra)
    assert failing.returncode == 3, failing.stderr[-3000:]
    assert (resolve(tmp_path / "fail") / "steps.csv").is_file()


def test_the_http_example_against_the_users_own_service(tmp_path: Path):
    with launch_target("sim-http", ["--port", "0", "--max-seconds", "300"]) as service:
        check_pass_and_fail(tmp_path, "http", service.url)


def test_the_mark_example_against_a_mark_server(tmp_path: Path):
    with launch_target("mark", ["--port", "0", "--seed-corpus", "20"]) as server:
        check_pass_and_fail(tmp_path, "mark", server.url, "--mark-insecure")
