"""Issue 18.5 / 21.5 end to end: a full headless run of each kind's locustfile (``--run-dir``) whose target is killed
and started again on its port mid-run. The run goes on, its failures are named and confined to the outage, nothing is
counted twice, and ``summary.json``'s "Outages" has the one window covering the real down time (``report.md`` too).

One parametrized test, a short run per kind; each prints its measured window and failure count.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import pytest

from swarmgauge.run_folders import resolve
from swarmgauge.targets.kneo import KneoService
from swarmgauge.targets.launch import child_env, launch_target
from swarmgauge.targets.mcp_gateway import launch
from swarmgauge.targets.mdk.stack import MDKStack
from tests import REPO_ROOT
from tests.thirdparty.servers import free_port
from tests.users.test_mark_user import free_udp_port

pytestmark = pytest.mark.integration
RUN_SECONDS = 20  # the stage: spawn, BEFORE s of load, the outage, and the rest of the run healthy
BEFORE = 4.0
DOWN = 3.0
BUCKET = 1.0  # a local run's timeline.csv bucket (listeners.step_state.LOCAL_DRAIN_INTERVAL)
FIRST_DOC = "/corpus/quic/doc-0000.md"
CORPUS = 20
MAX_FAILURE_ROWS = 10  # a bounded set of names: one row per request name and fault class, never per attempt


@dataclass
class Kind:
    """One target kind: its locustfile, the user class to run, its options, and the failure classes it may show."""

    locustfile: str
    user_class: str
    named: set[str]
    args: list[str] = field(default_factory=list)
    plan: bool = True  # the locustfile has a plan shape (brain_stress runs on -u/-t)


KINDS = {
    "mark": Kind(
        "demarkus_reads.py",
        "FetchUser",
        {"ConnectFailed", "ConnectionLost", "RequestTimeout", "HandshakeTimeout"},
        ["--mark-timeout", "3", "--mark-corpus", str(CORPUS), "--mark-insecure"],  # its dev certificate
    ),
    "mcp-gateway": Kind(
        "mcp_churn.py",
        "MCPToolUser",
        {"MCPUnreachable", "MCPConnectionLost", "MCPBadHTTP", "MCPTimeout", "SessionExpired"},
        ["--mcp-tool", "mark_fetch", "--mcp-args", json.dumps({"url": FIRST_DOC}), "--mcp-timeout", "3"],
    ),
    "kneo-serv": Kind("kneo_dispatch.py", "KneoDispatchUser", {"KneoUnreachable"}, ["--kneo-no-gauges"]),
    "mdk": Kind("mdk_fleet.py", "MDKFleetUser", {"GatewayUnreachable", "GatewayTimeout"}, ["--mdk-timeout", "2"]),
    "brain": Kind("brain_stress.py", "StressWorker", {"BrainUnreachable"}, plan=False),
}


class Target:
    """A target of one kind on a fixed port: ``host`` for Locust, ``kill()`` (SIGKILL) and ``start()`` again."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.port = free_udp_port() if kind == "mark" else free_port()
        self.extra: list[Any] = []  # what the target needs and outlives its restarts (the Mark server behind MCP)
        self.process: Any = None
        self.service: Any = None
        self.stack: Any = None

    def start(self) -> None:
        if self.kind == "mark":
            self.process = launch_target("mark", ["--port", str(self.port), "--seed-corpus", str(CORPUS)])
        elif self.kind == "mcp-gateway":
            if not self.extra:
                self.extra.append(launch_target("mark", ["--port", "0", "--seed-corpus", "5"]))
            self.process = launch(["--mark", self.extra[0].url, "--port", str(self.port), "--mark-timeout", "3"])
        elif self.kind == "kneo-serv":
            if self.service is None:
                self.service = KneoService(store="sqlite").start()
            else:
                self.service.start_process(0)
        elif self.kind == "mdk":
            if self.stack is None:
                self.process = launch_target(
                    "mdk", ["--devices", "4", "--port", str(self.port)], wait_for=("root", "ready")
                )
                self.stack = MDKStack.attach(self.process.lines["root"])
            else:
                self.stack.restart("gateway")  # the Gateway again, on its port, before the same Kernel and fleet
        else:
            self.process = launch_target("brain", ["--port", str(self.port), "--search-ms", "1"])

    @property
    def host(self) -> str:
        if self.kind == "kneo-serv":
            return self.service.url
        if self.kind == "mcp-gateway":
            return self.process.base_url
        return self.process.url.rstrip("/")

    def kill(self) -> None:
        if self.kind == "kneo-serv":
            self.service.kill_process(0)
        elif self.kind == "mdk":
            self.stack.kill("gateway")  # the Gateway process alone: a whole new stand-in would be a new fleet
        else:
            self.process.process.kill()
            self.process.stop(timeout=5)

    def close(self) -> None:
        if self.service is not None:
            self.service.stop()
        if self.process is not None:
            self.process.stop()
        for extra in self.extra:
            extra.stop()


@contextmanager
def target_of(kind: str) -> Iterator[Target]:
    target = Target(kind)
    try:
        target.start()
        yield target
    finally:
        target.close()


def locust_command(kind: Kind, host: str, tmp_path: Path) -> list[str]:
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "locust", "-f", str(REPO_ROOT / "locustfiles" / kind.locustfile), "--headless"]
    if kind.plan:
        plan = tmp_path / "restart.yaml"
        plan.write_text(
            "name: restart\nkind: stages\nstages:\n"
            f"  - {{label: load, users: 2, duration: {RUN_SECONDS}s, user_classes: [{kind.user_class}]}}\n"
        )
        command += ["--plan", str(plan)]
    else:
        command += [kind.user_class, "-u", "2", "-r", "2", "-t", f"{RUN_SECONDS}s"]
    return [
        *command,
        "--host",
        host,
        "--run-dir",
        str(run_dir),
        "--stop-timeout",
        "5",
        "--csv",
        str(tmp_path / "locust"),
        *kind.args,
    ]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def aggregated(rows: list[dict[str, str]], column: str) -> int:
    """``column`` summed over every request type's row (Locust's CSVs name it ``Name``, steps.csv ``name``); not the
    Aggregated row, which steps.csv keeps for the request types a user waits on (no QUIC handshakes)."""
    return sum(int(r[column] or 0) for r in rows if r.get("Name", r.get("name")) != "Aggregated")


@pytest.fixture(params=list(KINDS))
def kind(request) -> str:
    if request.param == "kneo-serv":
        request.getfixturevalue("kneo_venv")  # skipped, with its reason, where kneo-serv cannot be installed
    return request.param


@pytest.mark.timeout(600)
def test_a_run_through_a_target_restart_marks_one_outage_window(kind, tmp_path, capsys):
    spec = KINDS[kind]
    with target_of(kind) as target:
        run = subprocess.Popen(
            locust_command(spec, target.host, tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            cwd=REPO_ROOT,
        )
        lines: list[str] = []
        reader = gevent.spawn(lambda: lines.extend(iter(run.stderr.readline, "")))
        try:
            for _ in range(600):  # the load is on once every user is spawned (a slow start is no outage)
                if any("All users spawned" in line for line in lines) or run.poll() is not None:
                    break
                gevent.sleep(0.1)
            gevent.sleep(BEFORE)
            killed = time.time()
            target.kill()
            gevent.sleep(DOWN)
            target.start()
            back = time.time()
            run.wait(timeout=180)
        finally:
            if run.poll() is None:
                run.kill()
            reader.join(timeout=10)
    stderr = "".join(lines)
    assert run.returncode in (0, 1, 3), stderr[-3000:]  # 1: request failures, 3: an SLO gate, as an outage makes
    assert "Traceback" not in stderr, stderr[-3000:]

    run_dir = resolve(tmp_path / "run")
    windows = json.loads((run_dir / "summary.json").read_text())["Outages"]["windows"]
    assert len(windows) == 1, windows
    window = windows[0]
    # the window covers the real down time, to the timeline's resolution (a bucket holds the second before its time)
    assert window["start"] <= killed + 2 * BUCKET and window["end"] >= back - BUCKET, (window, killed, back)
    assert window["end"] - window["start"] <= (back - killed) + 6 * BUCKET, (window, killed, back)
    assert "Outages" in (run_dir / "report.md").read_text()

    timeline = read_csv(run_dir / "timeline.csv")
    outside = [r for r in timeline if int(r["failures"]) and not window["start"] <= float(r["time"]) < window["end"]]
    assert not outside, (outside, window)  # every failure inside the outage
    after = [r for r in timeline if float(r["time"]) >= window["end"]]
    assert sum(int(r["requests"]) for r in after) > 0, "the load goes on after the outage"

    # nothing counted twice: every failure once in Locust's table, its stats, steps.csv, the timeline and the window
    stats = read_csv(tmp_path / "locust_stats.csv")
    steps = read_csv(run_dir / "steps.csv")
    failures = read_csv(tmp_path / "locust_failures.csv")
    assert 0 < len(failures) <= MAX_FAILURE_ROWS, failures
    assert {f["Error"].split("(")[0] for f in failures} <= spec.named, failures
    failed = sum(int(f["Occurrences"]) for f in failures)
    assert failed == aggregated(stats, "Failure Count") == aggregated(steps, "failures") == window["failures"]
    assert aggregated(steps, "requests") == sum(int(r["requests"]) for r in timeline)
    with capsys.disabled():
        print(
            f"\n[run restart, {kind}] target down {back - killed:.1f} s; report outage window "
            f"{window['start'] - killed:+.1f}..{window['end'] - back:+.1f} s around it "
            f"({window['end'] - window['start']:.1f} s), {window['failures']} of {window['requests']} requests failed"
        )
