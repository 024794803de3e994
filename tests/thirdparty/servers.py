"""Third-party MCP servers on loopback, installed by ``.ci/run`` from their registries (not stand-ins of ours).

- ``@modelcontextprotocol/server-everything`` (npm) under ``$SWARMGAUGE_THIRDPARTY/npm``, run by Node with
  ``loopback.cjs`` preloaded (it binds every interface otherwise);
- fastmcp (PyPI) in its own venv ``$SWARMGAUGE_THIRDPARTY/fastmcp-venv`` (its pins must not move ours);
- the official SDK's ``MCPServer`` from our own venv (the stateless 2026-07-28 era).

A missing install skips the test with the command that installs it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("SWARMGAUGE_THIRDPARTY", Path.home() / ".cache" / "swarmgauge"))
EVERYTHING = ROOT / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FASTMCP_PYTHON = ROOT / "fastmcp-venv" / "bin" / "python"
START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class ServerProcess:
    """One server process on a fixed loopback port, which can be killed and started again on that port."""

    def __init__(self, argv: list[str], port: int, env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.port = port
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        self.process = subprocess.Popen(
            self.argv, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=HERE
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not _accepting(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.argv[:3]} did not listen on 127.0.0.1:{self.port}")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        """SIGKILL: a crash, as a restart test wants (no goodbye to the clients)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


def everything_server() -> ServerProcess:
    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        pytest.skip(
            f"server-everything not installed: npm install --prefix {ROOT / 'npm'} "
            "@modelcontextprotocol/server-everything (.ci/run does)"
        )
    port = free_port()
    return ServerProcess(
        [node, "--require", str(HERE / "loopback.cjs"), str(EVERYTHING), "streamableHttp"], port, {"PORT": str(port)}
    )


def fastmcp_server(json_response: bool) -> ServerProcess:
    if not FASTMCP_PYTHON.exists():
        pytest.skip(
            f"fastmcp not installed: python3 -m venv {ROOT / 'fastmcp-venv'} && "
            f"{FASTMCP_PYTHON.parent / 'pip'} install fastmcp (.ci/run does)"
        )
    port = free_port()
    flags = ["--json"] if json_response else []
    return ServerProcess([str(FASTMCP_PYTHON), str(HERE / "fastmcp_app.py"), str(port), *flags], port)


def sdk_server() -> ServerProcess:
    port = free_port()
    return ServerProcess([sys.executable, str(HERE / "sdk_app.py"), str(port)], port)
