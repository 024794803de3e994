"""The real demarkus server's wire goldens, replayed over real QUIC against ``swarmgauge target mark``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.targets.mark.conftest import GOLDEN_CLOCK, WRITE_TOKEN

GOLDENS = Path(__file__).parent / "goldens"


def golden_bytes(name: str) -> bytes:
    """A copied golden of the Go server, else the one derived from the brief (see goldens/derived/README.md)."""
    for folder in (GOLDENS, GOLDENS / "derived"):
        if (folder / name).exists():
            return (folder / name).read_bytes()
    raise AssertionError(f"no golden named {name}")


def test_scenario_reproduces_every_golden_byte_for_byte(start_mark, mark_client):
    server = start_mark("--clock", GOLDEN_CLOCK, "--publish-token", WRITE_TOKEN)
    client = mark_client(server.url)
    scenario = json.loads((GOLDENS / "scenario.json").read_text(encoding="utf-8"))
    assert len(scenario) == 18
    mismatches = []
    for step in scenario:
        answer = client.raw(step["request"].encode("utf-8"))
        if step["golden"] is None:
            assert b"\nstatus: created\n" in answer, f"set-up step {step['step']} answered {answer!r}"
            continue
        expected = golden_bytes(step["golden"])
        if answer != expected:
            mismatches.append((step["step"], step["golden"], expected, answer))
    assert not mismatches, "\n".join(f"step {s} {g}:\n want {e!r}\n got  {a!r}" for s, g, e, a in mismatches)


def test_copied_goldens_are_the_real_servers(start_mark):
    """Every golden in the top folder is the Go suite's own file (nothing hand-edited crept in)."""
    copied = {p.name for p in GOLDENS.glob("*.golden")}
    derived = {p.name for p in (GOLDENS / "derived").glob("*.golden")}
    named = {s["golden"] for s in json.loads((GOLDENS / "scenario.json").read_text()) if s["golden"]}
    assert copied | derived == named
    assert not copied & derived
