"""Issue 18.5 for kneo-serv: the real service's process killed and started again on its port mid-run."""

from __future__ import annotations

import uuid

import pytest
from locust.event import Events

from swarmgauge.targets.kneo import KneoService
from swarmgauge.users.kneo_client import KneoClient
from tests.thirdparty import restart

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first use may build the kneo-serv venv


def test_kneo_restart_mid_run(kneo_venv, capsys):
    service = KneoService(store="sqlite").start()
    events = Events()
    recorded: list[dict] = []
    events.request.add_listener(lambda **kw: recorded.append(kw))
    client = KneoClient(service.url, request_events=events, tag=f"sg-restart-{uuid.uuid4().hex[:8]}", timeout=5.0)
    calls = [0]

    def iterate() -> None:
        calls[0] += 1
        try:
            client.dispatch()
        except Exception:  # noqa: BLE001 - every failure is recorded by the client; this loop only goes on
            pass

    try:
        outage = restart.through_restart(
            recorded, iterate, lambda: service.kill_process(0), lambda: service.start_process(0)
        )
    finally:
        service.stop()
    sync = [e for e in outage.events if e["request_type"] == "run sync"]
    assert len(sync) == calls[0]  # one row per dispatch: nothing counted twice
    outage.check({"KneoUnreachable"})  # named by the client, one class per kind of fault
    with capsys.disabled():
        print("\n" + outage.summary("kneo-serv"))
