"""The open model in real headless runs: exact arrival counts whatever the response time, dropped tickets at the
concurrency cap, and latency from the intended start (a stalled target shows in p90/p99, as wrk2 shows it), for
any User: swarmgauge's own and Locust's HttpUser/FastHttpUser with no ticket code of their own."""

from __future__ import annotations

import csv
import time
from pathlib import Path
from types import SimpleNamespace

import gevent
import pytest

from swarmgauge.core import hooks
from swarmgauge.listeners.steps import StepInfo
from swarmgauge.run_folders import resolve
from swarmgauge.shapes import open_model
from swarmgauge.shapes.open_model import TicketScheduler, arrival_time, arrivals_by, scheduler, take_ticket
from tests.listeners.sim_run import rank_percentile, read_steps, run_distributed, run_local, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

OPEN = {"SIM_USER_MODE": "open"}
STOP = ("--stop-timeout", "5")

CLASS_LOCUSTFILE = """
from tests.listeners.sim_locustfile import SimUser  # noqa: F401 - SIM_USER_MODE=open: takes tickets
from swarmgauge.shapes import ArrivalRate


class FivePerSecond(ArrivalRate):
    rate = 5
    duration = "4s"
    max_users = 10
"""


# Locust's own HTTP Users, with nothing of the open model in them: the plan alone makes them take tickets.
PLAIN_HTTP_LOCUSTFILE = """
from locust import {user_class}, constant, task

import swarmgauge.locust  # noqa: F401
from swarmgauge import api as sg


class FivePerSecond(sg.ArrivalRate):
    rate = 5
    duration = "4s"
    max_users = 4
    drop_after = "3s"


class Plain({user_class}):
    {wait_time}

    @task
    def item(self) -> None:
        self.client.get("/item")
"""

# The same stall measured by swarmgauge's measure() (SimUser, which takes its own tickets) and by a plain
# FastHttpUser side by side in one open-model step: the tickets go to whichever user is free.
STALL_LOCUSTFILE = """
from locust import FastHttpUser, task

from tests.listeners.sim_locustfile import SimUser  # noqa: F401 - SIM_USER_MODE=open: measure(), own tickets
from swarmgauge.shapes import ArrivalRate


class TwentyPerSecond(ArrivalRate):
    rate = 20
    duration = "6s"
    max_users = 4
    drop_after = "3s"
    user_classes = ["SimUser", "PlainFast"]  # both: with none named, a rate step runs only the ticket-taking class


class PlainFast(FastHttpUser):
    @task
    def item(self) -> None:
        self.client.get("/item", name="fast /item")
"""

OWN_LOOP_LOCUSTFILE = """
import gevent
from locust import User

import swarmgauge.locust  # noqa: F401
from swarmgauge import api as sg


class FivePerSecond(sg.ArrivalRate):
    rate = 5
    duration = "4s"


class OwnLoop(User):
    def run(self) -> None:
        gevent.sleep(1)
"""


def _item_row(run_dir: Path, name: str = "/item") -> dict[str, str]:
    rows = [r for r in read_steps(run_dir) if r["name"] == name]
    assert len(rows) == 1, rows
    return rows[0]


def _open_run(tmp_path: Path, target_args: tuple[str, ...], *args: str, runner=run_local, **kwargs) -> list[dict]:
    """A headless run (``args``, then ``--stop-timeout 5 --run-dir tmp_path/run``) against a sim target started with
    ``target_args``, that must exit 0; the target's record of what it served. ``env`` defaults to :data:`OPEN`."""
    with sim_target(*target_args) as target:
        result = runner(target.url, *args, *STOP, "--run-dir", str(tmp_path / "run"), **{"env": OPEN, **kwargs})
        records = target.records()
    assert result.returncode == 0, result.stderr[-3000:]
    return records


def _rate(rate: str, duration: str, max_users: str, *more: str) -> tuple[str, ...]:
    return ("--rate", rate, "--duration", duration, "--max-users", max_users, *more)


def _locust_p90(run_dir: Path, name: str) -> float:
    """Locust's own 90 % percentile of ``name`` (its stats CSV in the run folder)."""
    found = list(run_dir.rglob("locust_stats.csv"))
    assert len(found) == 1, found
    with open(found[0], newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["Name"] == name]
    assert len(rows) == 1, rows
    return float(rows[0]["90%"])


def test_slots_split_one_schedule_exactly():
    total = arrivals_by(3.0, 5.0, None, 3.0)
    shares = [len(range(slot, total, 2)) for slot in range(2)]
    assert total == 15 and shares == [8, 7]
    second_slot = [arrival_time(k, 5.0, None, 3.0) for k in range(1, 6, 2)]
    assert second_slot == pytest.approx([0.2, 0.6, 1.0])


def _busy(seconds: float) -> None:
    """Hold the event loop without yielding, so timers expire before the hub can run them."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def test_a_ticket_handed_over_while_its_wait_times_out_is_not_lost():
    scheduler = TicketScheduler(SimpleNamespace())
    waiting = gevent.spawn(scheduler.take, 0.01)
    gevent.sleep(0)  # the user is now waiting
    _busy(0.03)  # its timeout has expired but not yet been delivered
    scheduler._hand_out(123.0, 0)
    assert waiting.get(timeout=5) == 123.0
    assert not scheduler.queue and not scheduler.waiters


def test_a_late_issuer_still_issues_its_whole_step_when_the_step_ends():
    """The step is over when the next begins: tickets a busy process has not issued yet are all due, so they are
    issued then (taken or dropped), and the count stays rate x duration."""
    scheduler = TicketScheduler(SimpleNamespace())
    scheduler.start(StepInfo(0, "open", 4, 20.0, time.time(), duration=0.5, drop_after=5.0))
    waiting = gevent.spawn(scheduler.take, 5.0)
    gevent.sleep(0)  # one user waits; the issuer has not run yet
    scheduler.start(StepInfo(1, "idle", 0, None, time.time()))
    assert scheduler.issued == 10
    assert waiting.get(timeout=5) is not None and len(scheduler.queue) == 9
    assert scheduler.expire(everything=True) == 9 and scheduler.dropped == 9


def test_a_run_cut_short_issues_no_ticket_that_was_not_yet_due():
    scheduler = TicketScheduler(SimpleNamespace())
    scheduler.start(StepInfo(0, "open", 4, 1.0, time.time(), duration=60.0))
    gevent.sleep(0.05)
    scheduler.stop_issuing()
    assert scheduler.issued == 1 and scheduler.greenlet is None


def test_a_ticket_handed_to_a_user_killed_before_it_woke_goes_back_to_the_queue():
    scheduler = TicketScheduler(SimpleNamespace())
    waiting = gevent.spawn(scheduler.take, 5.0)
    gevent.sleep(0)
    due = time.perf_counter()
    waiting.kill(block=False)  # the stop is on its way...
    scheduler._hand_out(due, 2)  # ...when the ticket reaches the user
    waiting.join(timeout=5)
    assert waiting.dead
    assert list(scheduler.queue) == [(due, 2)]
    assert scheduler.take(0.0) == due


def _open_step_user(monkeypatch, rate: float | None = 5.0) -> SimpleNamespace:
    """A stand-in user whose process is in a step of ``rate`` (hooks.current_step answers for the step listener)."""
    environment = SimpleNamespace(runner=None)
    step = {"now": StepInfo(0, "open", 4, rate, time.time())}
    monkeypatch.setattr(hooks.current_step, "implementation", lambda _env: step["now"])
    return SimpleNamespace(environment=environment, step=step)


def test_the_longest_waiting_user_gets_the_next_ticket_however_long_it_has_waited(monkeypatch):
    """A user that waits for its first ticket (MCPChurnUser's on_start) is not overtaken by users that joined the
    queue after it, so none starves."""
    early = _open_step_user(monkeypatch)
    late = SimpleNamespace(environment=early.environment)
    first = gevent.spawn(take_ticket, early, 5.0)
    gevent.sleep(2 * open_model.IDLE_WAIT)
    second = gevent.spawn(take_ticket, late, 5.0)
    gevent.sleep(0)
    scheduler(early.environment)._hand_out(time.perf_counter(), 0)
    assert first.get(timeout=5) is True
    assert not second.ready()
    second.kill()


def test_a_user_waiting_for_a_ticket_sees_a_closed_step_within_a_look(monkeypatch):
    user = _open_step_user(monkeypatch)
    waiting = gevent.spawn(take_ticket, user, 60.0)
    gevent.sleep(0)
    user.step["now"] = StepInfo(1, "closed", 4, None, time.time())
    assert waiting.get(timeout=5 * open_model.IDLE_WAIT) is False
    assert not scheduler(user.environment).waiters


def test_a_user_waiting_for_a_ticket_when_a_step_of_no_users_begins_waits_to_be_stopped(monkeypatch):
    """Locust stops every user at a 0-user step; one woken to run closed-model would send requests in it."""
    user = _open_step_user(monkeypatch)
    waiting = gevent.spawn(take_ticket, user, 60.0)
    gevent.sleep(0)
    user.step["now"] = StepInfo(1, "idle", 0, None, time.time())
    gevent.sleep(3 * open_model.IDLE_WAIT)
    assert not waiting.ready()
    waiting.kill()
    assert not scheduler(user.environment).waiters


@pytest.mark.parametrize("delay", ["const:20", "const:700"])
def test_five_per_second_starts_exactly_twenty_whatever_the_response_time(tmp_path, delay):
    locustfile = tmp_path / "five_per_second.py"
    locustfile.write_text(CLASS_LOCUSTFILE)
    records = _open_run(tmp_path, ("--delay", delay), locustfile=locustfile)
    row = _item_row(tmp_path / "run")
    assert (int(row["requests"]), int(row["tickets"]), int(row["dropped"])) == (20, 20, 0), row
    assert len(records) == 20
    assert row["target_rate"] == "5.0"


def test_two_workers_together_issue_the_plan_count(tmp_path):
    records = _open_run(tmp_path, ("--delay", "const:20"), *_rate("5", "3s", "6"), runner=run_distributed)
    row = _item_row(tmp_path / "run")
    assert len(records) == 15
    assert (int(row["requests"]), int(row["tickets"]), int(row["dropped"]), int(row["workers"])) == (15, 15, 0, 2)


def test_a_thousand_per_second_for_three_seconds(tmp_path):
    # --drop-after 3s: a ticket waits out a busy machine's stall of the generator (parallel tests) instead of dropping
    records = _open_run(tmp_path, ("--delay", "const:5"), *_rate("1000", "3s", "100", "--drop-after", "3s"))
    row = _item_row(tmp_path / "run")
    requests, tickets, dropped = int(row["requests"]), int(row["tickets"]), int(row["dropped"])
    assert tickets == 3000  # the schedule is exact; how many a loaded machine sends in time is not asserted
    assert requests + dropped == tickets  # a ticket the generator could not serve is counted, never lost
    assert requests > 0 and len(records) == requests


def test_the_concurrency_cap_drops_tickets_and_counts_them(tmp_path):
    records = _open_run(tmp_path, ("--delay", "const:400"), *_rate("20", "3s", "2", "--drop-after", "0.5s"))
    row = _item_row(tmp_path / "run")
    requests, tickets, dropped = int(row["requests"]), int(row["tickets"]), int(row["dropped"])
    assert tickets == 60 and requests + dropped == 60
    assert requests == len(records)
    assert requests <= 2 * (3.0 + 1.0) / 0.4 + 2  # two users at 0.4 s each, over the stage and its tail
    assert dropped >= 30


def test_a_one_second_stall_shows_in_the_percentiles_from_the_intended_start(tmp_path):
    stall = ("--delay", "const:10", "--stall-at", "1.5", "--stall-for", "1")
    records = _open_run(tmp_path, stall, *_rate("20", "4s", "4", "--drop-after", "3s"))
    row = _item_row(tmp_path / "run")
    assert (int(row["requests"]), int(row["dropped"])) == (80, 0)
    held_long = [r for r in records if r["held_ms"] > 500]
    assert 1 <= len(held_long) <= 4  # the target itself held only the requests in flight when it stalled
    assert rank_percentile([r["served_ms"] for r in records], 90) < 100
    # ...but every ticket due during the stall waited for it, and its latency counts from when it was due
    assert float(row["p99_ms"]) >= 900
    assert float(row["p90_ms"]) >= 300


@pytest.mark.parametrize(
    ("user_class", "wait_time"),
    [("FastHttpUser", "pass"), ("HttpUser", "wait_time = constant(2)")],
    ids=["FastHttpUser", "HttpUser-with-think-time"],
)
def test_locusts_own_http_users_hold_the_planned_rate_with_no_ticket_code(tmp_path, user_class, wait_time):
    """5/s for 4 s is 20 requests, not a closed loop's hundreds; a 2 s think time (which would cap 4 users at
    2/s) is not slept in an open-model step: the ticket is the wait."""
    locustfile = tmp_path / "plain_http.py"
    locustfile.write_text(PLAIN_HTTP_LOCUSTFILE.format(user_class=user_class, wait_time=wait_time))
    served = _open_run(tmp_path, ("--delay", "const:20"), locustfile=locustfile, env=None)
    records = [r for r in served if r["path"].startswith("/item")]
    row = _item_row(tmp_path / "run")
    requests, tickets, dropped = int(row["requests"]), int(row["tickets"]), int(row["dropped"])
    assert tickets == 20 and requests + dropped == tickets, row
    assert requests >= 18 and len(records) == requests, row  # a loaded machine may drop a ticket, never add one


def test_a_stall_shows_the_same_in_locusts_fast_http_user_as_through_measure(tmp_path):
    """Issue 28 #8: 2 s stall, 20/s, 4 users: the tickets due during it wait, and whichever User served them counts
    their latency from when they were due, in the per-step HDR statistics and in Locust's own."""
    locustfile = tmp_path / "stall.py"
    locustfile.write_text(STALL_LOCUSTFILE)
    run_dir = tmp_path / "run"
    _open_run(tmp_path, ("--delay", "const:10", "--stall-at", "1.5", "--stall-for", "2"), locustfile=locustfile)
    measured, fast = _item_row(run_dir), _item_row(run_dir, "fast /item")
    assert int(measured["tickets"]) == 120
    assert int(measured["requests"]) + int(fast["requests"]) + int(measured["dropped"]) == 120
    assert int(fast["requests"]) >= 20 and int(measured["requests"]) >= 20, (measured, fast)
    p90_measured, p90_fast = float(measured["p90_ms"]), float(fast["p90_ms"])
    assert p90_measured >= 500 and p90_fast >= 500, (p90_measured, p90_fast)
    assert 0.5 <= p90_fast / p90_measured <= 2.0, (p90_measured, p90_fast)
    assert _locust_p90(run_dir, "fast /item") >= 500


def test_a_user_that_runs_its_own_loop_in_an_open_model_stage_stops_the_run_with_one_line(tmp_path):
    locustfile = tmp_path / "own_loop.py"
    locustfile.write_text(OWN_LOOP_LOCUSTFILE)
    run_dir = tmp_path / "run"
    result = run_local("http://127.0.0.1:9", "--run-dir", str(run_dir), locustfile=locustfile, timeout=60)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and "OwnLoop" in lines[0] and "open-model stage" in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (resolve(run_dir) / "steps.csv").exists()


def test_tickets_are_left_while_the_issuer_runs_or_one_is_queued_and_none_once_all_are_taken():
    scheduler = TicketScheduler(SimpleNamespace())
    assert not scheduler.tickets_left()  # no step yet
    scheduler.start(StepInfo(0, "open", 4, 100.0, time.time(), duration=0.05, drop_after=5.0))
    assert scheduler.tickets_left()  # issuing
    scheduler.greenlet.join(timeout=5)
    assert scheduler.issued == 5 and scheduler.tickets_left()  # issued, queued for a free user
    for _ in range(5):
        assert scheduler.take(0.0) is not None
    assert not scheduler.tickets_left()
