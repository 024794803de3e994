"""Throughput with 1 and with 2 local workers against a target that is not the bottleneck, as a ratio, in one run.

``python -m benchmarks.scaling [--users 20] [--seconds 15] [--rounds 2] [--out benchmarks/results/scaling.json]``

The target is Debian's nginx serving a small static file, started here as our own process (temp config, one
free loopback port, access log off). The load is ``locustfiles/http_ramp.py`` (``FastHttpUser`` GETs, no wait) run
as a master with ``--expect-workers N`` and N ``--worker`` processes, N = 1 then 2, alternating for ``--rounds``
rounds so drift hits both alike. Throughput is the steps listener's req/s of the one step (``steps.csv``); nginx's
CPU over each run (psutil, all its processes, per second of the step) shows whether the target stayed below a core. Medians over the
rounds; the ratio is 2-worker over 1-worker throughput. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.files import write_json
from swarmgauge.targets.launch import stop_processes

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "scaling.json"
LOCUSTFILE = ROOT / "locustfiles" / "http_ramp.py"
BODY = b"swarmgauge scaling probe\n" * 8
READY_SECONDS = 10.0
NGINX_CONF = """daemon off;
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port};
        root {prefix}/www;
        location / {{ try_files /index.txt =404; }}
    }}
}}
"""


class NginxUnavailable(SwarmgaugeError):
    """nginx is not installed, or did not start listening."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Nginx:
    """nginx in the foreground on a free loopback port, with everything under a temp directory."""

    def __init__(self, workers: int) -> None:
        binary = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        if binary is None:
            raise NginxUnavailable("nginx not found (Debian: apt-get install nginx-light)")
        self.prefix = Path(tempfile.mkdtemp(prefix="sg-nginx-"))
        os.chmod(self.prefix, 0o755)  # nginx's workers may run as another user and must read www/
        (self.prefix / "www").mkdir(mode=0o755)
        (self.prefix / "www" / "index.txt").write_bytes(BODY)
        self.port = free_port()
        conf = self.prefix / "nginx.conf"
        conf.write_text(NGINX_CONF.format(workers=workers, prefix=self.prefix, port=self.port))
        self.process = subprocess.Popen(
            [binary, "-p", str(self.prefix), "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        error = self.process.stderr.read().decode("utf-8", "replace")[-500:] if self.process.poll() is not None else ""
        self.stop()
        raise NginxUnavailable(f"nginx did not listen on 127.0.0.1:{self.port}: {error.strip() or 'timeout'}")

    def cpu_seconds(self) -> float:
        """User + system CPU of the nginx master and its workers so far."""
        total = 0.0
        try:
            main = psutil.Process(self.process.pid)
            for process in [main, *main.children(recursive=True)]:
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            pass
        return total

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.prefix, ignore_errors=True)


def _locust(*args: str) -> list[str]:
    return [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--only-summary", *args]


def run_distributed(url: str, workers: int, users: int, seconds: int, run_dir: Path) -> subprocess.CompletedProcess:
    """One master with ``--expect-workers N`` and N workers on loopback; bounded by ``seconds`` plus start-up."""
    port = str(free_port())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    master = subprocess.Popen(
        _locust(
            "--headless",
            "--host",
            url,
            "--master",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            port,
            "--expect-workers",
            str(workers),
            "--expect-workers-max-wait",
            "60",
            "--steps",
            str(users),
            "--step-time",
            f"{seconds}s",
            "--stop-timeout",
            "2",
            "--run-dir",
            str(run_dir),
            "--no-report",
        ),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    children = [
        subprocess.Popen(
            _locust("--worker", "--master-host", "127.0.0.1", "--master-port", port),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    try:
        stdout, stderr = master.communicate(timeout=seconds + 120)
    finally:
        stop_processes([master, *children], grace=15)
    return subprocess.CompletedProcess(master.args, master.returncode, stdout, stderr)


def _step_figures(run_dir: Path) -> dict[str, Any]:
    from swarmgauge.run_folders import resolve

    with open(resolve(run_dir) / "steps.csv", newline="") as handle:
        [row] = [r for r in csv.DictReader(handle) if r["name"] == "Aggregated"]
    return {
        "requests": int(row["requests"]),
        "failures": int(row["failures"]),
        "duration_s": float(row["duration_s"]),
        "rps": float(row["rps"]),
        "p50_ms": float(row["p50_ms"] or 0),
        "p99_ms": float(row["p99_ms"] or 0),
        "workers_reporting": int(row["workers"]),
        "generator_cpu_max": float(row["generator_cpu_max"] or 0),
    }


def measure(users: int, seconds: int, rounds: int, nginx_workers: int) -> dict[str, Any]:
    nginx = Nginx(nginx_workers)
    runs: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="sg-scaling-") as scratch:
            for round_index in range(rounds):
                for workers in (1, 2):
                    run_dir = Path(scratch) / f"r{round_index}-w{workers}"
                    cpu_before = nginx.cpu_seconds()
                    result = run_distributed(nginx.url, workers, users, seconds, run_dir)
                    if result.returncode != 0:
                        raise SwarmgaugeError(
                            f"the {workers}-worker run exited {result.returncode}: {result.stderr.strip()[-800:]}"
                        )
                    figures = _step_figures(run_dir)
                    nginx_cpu = nginx.cpu_seconds() - cpu_before
                    held = figures["duration_s"] or float(seconds)  # nginx idles through start-up and teardown
                    figures.update(
                        round=round_index, workers=workers, nginx_cpu_percent=round(100.0 * nginx_cpu / held, 1)
                    )
                    runs.append(figures)
    finally:
        nginx.stop()
    medians = {w: statistics.median(r["rps"] for r in runs if r["workers"] == w) for w in (1, 2)}
    return {
        "benchmark": "scaling",
        "users": users,
        "seconds_per_run": seconds,
        "rounds": rounds,
        "target": {"kind": "nginx static file", "bytes": len(BODY), "nginx_workers": nginx_workers},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "rps_median": {"1": round(medians[1], 1), "2": round(medians[2], 1)},
        "ratio_2_to_1": round(medians[2] / medians[1], 3) if medians[1] else None,
        "runs": runs,
    }


def print_table(result: dict[str, Any]) -> None:
    print(
        f"FastHttpUser GETs of a static file on nginx, {result['users']} users, {result['seconds_per_run']} s a run, "
        f"{result['machine']['cpus']} CPUs"
    )
    print(
        f"{'workers':>7} {'round':>5} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'worker cpu max':>14} {'nginx cpu':>9}"
    )
    for run in result["runs"]:
        print(
            f"{run['workers']:>7} {run['round']:>5} {run['rps']:>9.0f} {run['p50_ms']:>7.1f} {run['p99_ms']:>7.1f} "
            f"{run['generator_cpu_max']:>13.0f}% {run['nginx_cpu_percent']:>8.0f}%"
        )
    print(
        f"median req/s: 1 worker {result['rps_median']['1']:.0f}, 2 workers {result['rps_median']['2']:.0f}; "
        f"ratio 2:1 = {result['ratio_2_to_1']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20, help="users in the one step (default 20)")
    parser.add_argument("--seconds", type=int, default=15, help="length of each run's step (default 15)")
    parser.add_argument("--rounds", type=int, default=2, help="1-worker/2-worker pairs, alternating (default 2)")
    parser.add_argument("--nginx-workers", type=int, default=1, help="nginx worker processes (default 1)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON result (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    try:
        if min(args.users, args.seconds, args.rounds, args.nginx_workers) < 1:
            raise UsageError("--users, --seconds, --rounds and --nginx-workers must be at least 1")
        result = measure(args.users, args.seconds, args.rounds, args.nginx_workers)
    except SwarmgaugeError as exc:
        print(f"benchmarks.scaling: {exc}", file=sys.stderr)
        return 2
    print_table(result)
    print(f"written to {write_json(args.out, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
