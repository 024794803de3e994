"""Fixtures that run the reference server as the CLI runs it: a child process on a free loopback port, once per
QUIC engine (the server and the client on the same one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmgauge.quic.engine import ENGINES
from swarmgauge.targets.launch import launch_target
from swarmgauge.targets.mark.auth import hash_token
from swarmgauge.users.mark_client import MarkClient

GOLDEN_CLOCK = "2026-01-01T00:00:00Z"
WRITE_TOKEN = "storetest-write-token"


def write_tokens_toml(path: Path, entries: dict[str, tuple[str, list[str], list[str]]]) -> Path:
    """A tokens.toml as the real server reads it: label -> (raw token, path globs, operations); only hashes kept."""
    lines = []
    for label, (raw, paths, operations) in entries.items():
        lines += [
            f"[tokens.{label}]",
            f'hash = "{hash_token(raw)}"',
            "paths = [" + ", ".join(f'"{p}"' for p in paths) + "]",
            "operations = [" + ", ".join(f'"{o}"' for o in operations) + "]",
            "",
        ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=ENGINES)
def quic_engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def start_mark(quic_engine):
    """``start_mark(*args)`` -> a running ``swarmgauge target mark --port 0 ARGS`` on the engine under test; all
    stopped at the end."""
    started = []

    def start(*args: str):
        process = launch_target("mark", ["--port", "0", "--quic-engine", quic_engine, *args])
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def mark_client(quic_engine):
    """``mark_client(url, **options)`` -> a pooled, insecure MarkClient on the engine under test, closed at the end."""
    clients = []

    def make(url: str, **options) -> MarkClient:
        options.setdefault("insecure", True)
        options.setdefault("quic_engine", quic_engine)
        options.setdefault("timeout", 10.0)
        client = MarkClient(url, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
