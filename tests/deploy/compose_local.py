"""Run docker-compose.yml's services as local processes: the file's environment, command and mounts, resolved.

No Docker engine here, so the test does what compose would: interpolate ``${VAR}``, ``${VAR:-default}`` and
``${VAR-default}`` from a shell environment, merge the service's ``environment``, map the service host names to
127.0.0.1 and the container mount points to local directories, and start the service's entry point with its
command. Every wait is bounded.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from swarmgauge.targets.launch import child_env

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
_VARIABLE = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>[^}]*))?\}")
ENTRY_POINTS = {"locust": [sys.executable, "-m", "locust"], "swarmgauge": [sys.executable, "-m", "swarmgauge.cli"]}


class ComposeInterpolationError(ValueError):
    """A ``${VAR}`` without a default and not set in the shell environment."""


def load_compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def interpolate(text: str, shell: dict[str, str]) -> str:
    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, default = match.group("name"), match.group("op"), match.group("default")
        value = shell.get(name)
        if op == ":-" and not value:
            return default
        if op == "-" and value is None:
            return default
        if value is None:
            raise ComposeInterpolationError(f"${{{name}}} is not set and has no default")
        return value

    return _VARIABLE.sub(replace, text)


@dataclass
class LocalService:
    """One service as compose would start it, resolved for this machine."""

    name: str
    argv: list[str]
    environment: dict[str, str]

    def start(self, extra_args: list[str] = (), **popen: Any) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCUST_", "SWARMGAUGE_"))}
        env.update(self.environment)
        return subprocess.Popen([*self.argv, *extra_args], cwd=ROOT, env=child_env(env), **popen)


def resolve(document: dict[str, Any], name: str, shell: dict[str, str], mounts: dict[str, Path]) -> LocalService:
    """Service ``name`` with its variables from ``shell``, host names mapped to 127.0.0.1 and mounts to ``mounts``."""
    service = document["services"][name]
    hosts = set(document["services"])

    def local(value: Any) -> str:
        text = interpolate(str(value), shell)
        for container_path, local_path in mounts.items():
            if text == container_path or text.startswith(container_path + "/"):
                text = str(local_path) + text[len(container_path) :]
        return "127.0.0.1" if text in hosts else text

    entry = [interpolate(str(part), shell) for part in service.get("entrypoint", ["locust"])]
    command = [local(part) for part in service.get("command", [])]
    environment = {key: local(value) for key, value in (service.get("environment") or {}).items()}
    return LocalService(name, [*ENTRY_POINTS[entry[0]], *entry[1:], *command], environment)


def option_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def with_option(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with ``flag``'s value replaced (the port a local run must pick freely)."""
    position = argv.index(flag)
    return [*argv[: position + 1], value, *argv[position + 2 :]]
