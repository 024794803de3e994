"""``listeners/signals.py``, the process's end: a SIGTERM that comes while the end writes starts no second end."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import gevent
import pytest

from swarmgauge.listeners import signals
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import run_local, sim_target

#: A locustfile of the sim tests' users whose own ``quitting`` listener sends the process one SIGTERM and lets the
#: hub run its handler, as compose's SIGTERM reaches a master once its workers exit, while it writes its report.
LATE_SIGTERM_LOCUSTFILE = textwrap.dedent("""
    import os
    import signal

    import gevent
    from locust import events

    import swarmgauge.locust  # noqa: F401 - every listener, the summary included
    from swarmgauge.shapes import PlanShape  # noqa: F401
    from tests.listeners.sim_locustfile import SimUser  # noqa: F401

    sent = []


    @events.quitting.add_listener
    def _sigterm_while_the_end_writes(**_kwargs):
        if not sent:
            sent.append(signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            gevent.sleep(0.5)
""")


def test_an_end_fired_again_in_turn_runs_and_one_from_another_greenlet_waits(monkeypatch):
    held: list[object] = []
    monkeypatch.setattr(signals, "wait_for_the_first_end", lambda: held.append(gevent.getcurrent()))
    environment, other = SimpleNamespace(), SimpleNamespace()  # a stand-in with no weak reference is kept too
    signals.one_end_at_a_time(environment)
    signals.one_end_at_a_time(environment)
    assert held == []
    second = gevent.spawn(signals.one_end_at_a_time, environment)
    second.join(timeout=5)
    assert held == [second]
    gevent.spawn(signals.one_end_at_a_time, other).join(timeout=5)
    assert held == [second]  # another Environment's first end


def _run_two_seconds(tmp_path: Path, locustfile_text: str) -> tuple[str, int, Path]:
    """A local run of one 2-user step of 2 s with ``locustfile_text``: its output, exit code and run folder."""
    locustfile = tmp_path / "signalled.py"
    locustfile.write_text(locustfile_text)
    run_dir = tmp_path / "run"
    with sim_target() as target:
        done = run_local(
            target.url, "--steps", "2", "--step-time", "2", "--run-dir", str(run_dir), locustfile=locustfile
        )
    return done.stdout + done.stderr, done.returncode, resolve(run_dir)


@pytest.mark.integration
def test_a_sigterm_while_the_run_ends_writes_everything_once_and_exits_with_the_runs_code(tmp_path):
    output, returncode, folder = _run_two_seconds(tmp_path, LATE_SIGTERM_LOCUSTFILE)
    assert returncode == 0, output[-3000:]
    assert output.count("Got SIGTERM signal") == 1
    assert output.count("Shutting down (exit code 0)") == 1
    assert output.count("\nexit code 0") == 1  # swarmgauge's summary, once
    assert "Traceback" not in output and "failed with SystemExit" not in output
    assert "a second end while this one writes its files" in output
    assert json.loads((folder / "run.json").read_text())["exit_code"] == 0
    assert (folder / "report.md").is_file() and (folder / "steps.csv").is_file()


#: As compose does to a master at a plan's end: its workers quit, and it sends the master SIGTERM while the master
#: stops its users and closes the run (``test_stop`` fires after the plan's last tick, before Locust's shutdown).
SIGTERM_AFTER_THE_PLAN_LOCUSTFILE = LATE_SIGTERM_LOCUSTFILE.replace(
    "@events.quitting.add_listener", "@events.test_stop.add_listener"
)


@pytest.mark.integration
def test_a_sigterm_after_the_plan_ended_is_not_what_ended_the_run(tmp_path):
    output, returncode, folder = _run_two_seconds(tmp_path, SIGTERM_AFTER_THE_PLAN_LOCUSTFILE)
    assert returncode == 0, output[-3000:]
    assert "Got SIGTERM after the plan's end" in output
    assert "run ended by SIGTERM" not in output
    info = json.loads((folder / "run.json").read_text())
    assert info["ended_by"] is None
    assert not info.get("cut_short")
