"""Debian's real ``prometheus`` (remote-write receiver on, scraping the Pushgateway every second) and
``prometheus-pushgateway``, started on loopback with free ports and a temporary data folder (the Pushgateway's
persistence file too: Debian's default is ``/var/lib/prometheus/pushgateway.data``, which kept one session's groups
for the next), stopped at the end.

``.ci/run`` installs both packages; without them the tests that need them skip with the reason.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmgauge.targets.launch import stop_processes
from tests.listeners.sim_run import free_port

READY_SECONDS = 30.0
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PUSHGATEWAY = shutil.which("prometheus-pushgateway") or "/usr/bin/prometheus-pushgateway"
SCRAPE_CONFIG = """global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pushgateway
    static_configs:
      - targets: ["127.0.0.1:{pushgateway_port}"]
"""


def missing() -> str | None:
    """Why the servers cannot start here, or None."""
    for binary in (PROMETHEUS, PUSHGATEWAY):
        if not Path(binary).exists():
            return f"{binary} is not installed (Debian's prometheus and prometheus-pushgateway; .ci/run installs them)"
    return None


@dataclass
class PromServers:
    prometheus_url: str
    pushgateway_url: str

    @property
    def remote_write_url(self) -> str:
        return f"{self.prometheus_url}/api/v1/write"

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant PromQL query's result vector."""
        url = f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as response:
            doc = json.loads(response.read())
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    def scalar(self, promql: str) -> float | None:
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None


def _wait_ready(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {READY_SECONDS} s: {log.read_text()[-2000:]}")


@contextmanager
def prom_servers(folder: Path) -> Iterator[PromServers]:
    gateway_port, prometheus_port = free_port(), free_port()
    config = folder / "prometheus.yml"
    config.write_text(SCRAPE_CONFIG.format(pushgateway_port=gateway_port))
    gateway_log, prometheus_log = folder / "pushgateway.log", folder / "prometheus.log"
    processes: list[subprocess.Popen] = []
    try:
        with open(gateway_log, "w") as gateway_out, open(prometheus_log, "w") as prometheus_out:
            processes.append(
                subprocess.Popen(
                    [
                        PUSHGATEWAY,
                        f"--web.listen-address=127.0.0.1:{gateway_port}",
                        f"--persistence.file={folder / 'pushgateway.data'}",  # Debian's default is /var/lib/prometheus
                    ],
                    stdout=gateway_out,
                    stderr=subprocess.STDOUT,
                )
            )
            processes.append(
                subprocess.Popen(
                    [
                        PROMETHEUS,
                        f"--config.file={config}",
                        f"--web.listen-address=127.0.0.1:{prometheus_port}",
                        f"--storage.tsdb.path={folder / 'data'}",
                        "--web.enable-remote-write-receiver",
                    ],
                    stdout=prometheus_out,
                    stderr=subprocess.STDOUT,
                )
            )
        servers = PromServers(f"http://127.0.0.1:{prometheus_port}", f"http://127.0.0.1:{gateway_port}")
        _wait_ready(f"{servers.pushgateway_url}/-/ready", processes[0], gateway_log)
        _wait_ready(f"{servers.prometheus_url}/-/ready", processes[1], prometheus_log)
        yield servers
    finally:
        stop_processes(processes, grace=10)
