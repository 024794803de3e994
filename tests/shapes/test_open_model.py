"""The open model in real headless runs: exact arrival counts whatever the response time, dropped tickets at the
concurrency cap, and latency from the intended start (a stalled target shows in p90/p99, as wrk2 shows it)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import gevent
import pytest

from swarmgauge.listeners.steps import StepInfo
from swarmgauge.shapes.open_model import TicketScheduler, arrival_time, arrivals_by
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


def _item_row(run_dir: Path) -> dict[str, str]:
    rows = [r for r in read_steps(run_dir) if r["name"] == "/item"]
    assert len(rows) == 1, rows
    return rows[0]


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


@pytest.mark.parametrize("delay", ["const:20", "const:700"])
def test_five_per_second_starts_exactly_twenty_whatever_the_response_time(tmp_path, delay):
    locustfile = tmp_path / "five_per_second.py"
    locustfile.write_text(CLASS_LOCUSTFILE)
    run_dir = tmp_path / "run"
    with sim_target("--delay", delay) as target:
        result = run_local(target.url, *STOP, "--run-dir", str(run_dir), locustfile=locustfile, env=OPEN)
        records = target.records()
    assert result.returncode == 0, result.stderr[-3000:]
    row = _item_row(run_dir)
    assert (int(row["requests"]), int(row["tickets"]), int(row["dropped"])) == (20, 20, 0), row
    assert len(records) == 20
    assert row["target_rate"] == "5.0"


def test_two_workers_together_issue_the_plan_count(tmp_path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:20") as target:
        result = run_distributed(
            target.url,
            "--rate",
            "5",
            "--duration",
            "3s",
            "--max-users",
            "6",
            *STOP,
            "--run-dir",
            str(run_dir),
            env=OPEN,
        )
        records = target.records()
    assert result.returncode == 0, result.stderr[-3000:]
    row = _item_row(run_dir)
    assert len(records) == 15
    assert (int(row["requests"]), int(row["tickets"]), int(row["dropped"]), int(row["workers"])) == (15, 15, 0, 2)


def test_a_thousand_per_second_for_three_seconds(tmp_path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        result = run_local(
            target.url,
            "--rate",
            "1000",
            "--duration",
            "3s",
            "--max-users",
            "100",
            "--drop-after",
            "3s",  # a ticket waits out a busy machine's stall of the generator (parallel tests) instead of dropping
            *STOP,
            "--run-dir",
            str(run_dir),
            env=OPEN,
        )
        records = target.records()
    assert result.returncode == 0, result.stderr[-3000:]
    row = _item_row(run_dir)
    requests, tickets, dropped = int(row["requests"]), int(row["tickets"]), int(row["dropped"])
    assert tickets == 3000  # the schedule is exact; how many a loaded machine sends in time is not asserted
    assert requests + dropped == tickets  # a ticket the generator could not serve is counted, never lost
    assert requests > 0 and len(records) == requests


def test_the_concurrency_cap_drops_tickets_and_counts_them(tmp_path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:400") as target:
        result = run_local(
            target.url,
            "--rate",
            "20",
            "--duration",
            "3s",
            "--max-users",
            "2",
            "--drop-after",
            "0.5s",
            *STOP,
            "--run-dir",
            str(run_dir),
            env=OPEN,
        )
        records = target.records()
    assert result.returncode == 0, result.stderr[-3000:]
    row = _item_row(run_dir)
    requests, tickets, dropped = int(row["requests"]), int(row["tickets"]), int(row["dropped"])
    assert tickets == 60 and requests + dropped == 60
    assert requests == len(records)
    assert requests <= 2 * (3.0 + 1.0) / 0.4 + 2  # two users at 0.4 s each, over the stage and its tail
    assert dropped >= 30


def test_a_one_second_stall_shows_in_the_percentiles_from_the_intended_start(tmp_path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:10", "--stall-at", "1.5", "--stall-for", "1") as target:
        result = run_local(
            target.url,
            "--rate",
            "20",
            "--duration",
            "4s",
            "--max-users",
            "4",
            "--drop-after",
            "3s",
            *STOP,
            "--run-dir",
            str(run_dir),
            env=OPEN,
        )
        records = target.records()
    assert result.returncode == 0, result.stderr[-3000:]
    row = _item_row(run_dir)
    assert (int(row["requests"]), int(row["dropped"])) == (80, 0)
    held_long = [r for r in records if r["held_ms"] > 500]
    assert 1 <= len(held_long) <= 4  # the target itself held only the requests in flight when it stalled
    assert rank_percentile([r["served_ms"] for r in records], 90) < 100
    # ...but every ticket due during the stall waited for it, and its latency counts from when it was due
    assert float(row["p99_ms"]) >= 900
    assert float(row["p90_ms"]) >= 300
