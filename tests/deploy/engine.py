"""A real Docker engine for the compose tests, when one is reachable, and the README's compose lines to run on it.

The engine is whatever the ``docker`` CLI reaches (``DOCKER_HOST``; ``.ci/run`` starts one with
``../shared/tools/docker-engine.sh``). The README is the script: its code blocks are taken line by line and run with
bash, unchanged, in a scratch folder; the knobs come from the environment, as the README says.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MIN_COMPOSE = (2, 20)
COMMAND_SECONDS = 900


class ReadmeBlockError(LookupError):
    """The README has no code block of the kind the test follows under the named heading."""


def _run(argv: list[str], timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def engine_unavailable() -> str | None:
    """Why no engine can run the stack here, or None when one can (CLI, reachable daemon, Compose >= 2.20)."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker CLI on PATH (start an engine: ../shared/tools/docker-engine.sh start; eval its env)"
    try:
        info = _run([docker, "info", "--format", "{{.ServerVersion}}"])
        if info.returncode != 0:
            last = (info.stderr.strip().splitlines() or ["?"])[-1]
            return f"no Docker engine reachable at DOCKER_HOST={os.environ.get('DOCKER_HOST', '(default)')}: {last}"
        compose = _run([docker, "compose", "version", "--short"])
    except subprocess.TimeoutExpired:
        return "the Docker engine did not answer within 20 s"
    found = re.match(r"v?(\d+)\.(\d+)", compose.stdout.strip())
    if compose.returncode != 0 or not found:
        return "no Docker Compose v2 plugin (`docker compose`)"
    if (int(found.group(1)), int(found.group(2))) < MIN_COMPOSE:
        return f"Docker Compose {compose.stdout.strip()} is older than v2.20, the file's minimum"
    return None


def engine_build_knobs() -> dict[str, str]:
    """What this engine's builds need: the host's network where it has no default bridge (docker-engine.sh), and
    Compose's own builder where buildx is older than 0.17 (Compose's bake builder refuses those)."""
    knobs = {}
    if "bridge" not in _run(["docker", "network", "ls", "--format", "{{.Name}}"]).stdout.split():
        knobs["SWARMGAUGE_BUILD_NETWORK"] = "host"
    buildx = re.search(r"v?(\d+)\.(\d+)", _run(["docker", "buildx", "version"]).stdout)
    if buildx is None or (int(buildx.group(1)), int(buildx.group(2))) < (0, 17):
        knobs["COMPOSE_BAKE"] = "false"
    return knobs


def readme_commands(heading: str, first_line: str) -> list[str]:
    """The lines of the first ``sh`` block under ``heading`` (a Markdown heading's text) whose first line
    contains ``first_line``."""
    text = README.read_text()
    found = re.search(rf"^#+ {re.escape(heading)}\n(?P<body>.*?)(?=^#+ )", text, re.MULTILINE | re.DOTALL)
    if not found:
        raise ReadmeBlockError(f"README: no heading {heading!r}")
    for block in re.findall(r"```sh\n(.*?)```", found.group("body"), re.DOTALL):
        lines = [line for line in block.splitlines() if line.strip()]
        if lines and first_line in lines[0]:
            return lines
    raise ReadmeBlockError(f"README: no sh block starting with {first_line!r} under {heading!r}")


@dataclass
class Shell:
    """Runs README lines with bash in ``cwd``, the knobs in ``env``; keeps what each took, for the report."""

    cwd: Path
    env: dict[str, str]

    def __post_init__(self) -> None:
        self.timings: list[tuple[str, float, int]] = []

    def run(self, line: str, timeout: float = COMMAND_SECONDS) -> subprocess.CompletedProcess:
        started = time.monotonic()
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", line],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        self.timings.append((line, time.monotonic() - started, result.returncode))
        print(f"\n[{time.monotonic() - started:6.1f} s, exit {result.returncode}] $ {line}", file=sys.stderr)
        return result

    def docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """A docker command of the test's own (not a README line), in the same environment."""
        return subprocess.run(
            ["docker", *args], cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def leftovers(self, project: str) -> dict[str, list[str]]:
        """Containers, volumes and networks still labelled with the compose project."""
        label = f"label=com.docker.compose.project={project}"
        found = {}
        for kind, argv in (
            ("containers", ["ps", "-a", "-q"]),
            ("volumes", ["volume", "ls", "-q"]),
            ("networks", ["network", "ls", "-q"]),
        ):
            found[kind] = self.docker(*argv, "--filter", label).stdout.split()
        return found


def base_environment() -> dict[str, str]:
    """This process's environment without compose or swarmgauge knobs, the venv's scripts first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCUST_", "SWARMGAUGE_", "COMPOSE_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env
