"""The backend's stalls: after about every N reads the whole backend stands still, and every read booked after the
stall begins, in a slot or queued for one, sits it out; reads already booked keep their answers."""

from __future__ import annotations

import asyncio

import pytest

from swarmgauge.targets.mark.backend import BackendKnobs, SimulatedBackend
from swarmgauge.targets.mark.pacing import Slots
from swarmgauge.targets.mark.stalls import StallSchedule


def test_stalls_come_after_about_every_n_reads_and_one_seed_stalls_after_the_same_reads():
    one, two = StallSchedule(0.06, 100), StallSchedule(0.06, 100)
    counts = []
    for read in range(2000):
        one.read_booked(float(read))
        two.read_booked(float(read))
        counts.append(one.stalls)
    assert 18 <= one.stalls <= 22  # 20, gaps of 90 to 110 reads
    assert 90 <= counts.index(1) <= 110
    assert [one.finish(t, 0.5) for t in range(0, 2000, 7)] == [two.finish(t, 0.5) for t in range(0, 2000, 7)]


def _stalled_at(moment: float) -> StallSchedule:
    schedule = StallSchedule(0.06, 2)
    while not schedule.stalls:
        schedule.read_booked(moment)
    return schedule


def test_work_that_spans_a_stall_ends_later_by_it_and_work_begun_in_one_waits_for_its_end():
    schedule = _stalled_at(10.0)
    assert schedule.finish(9.0, 0.5) == pytest.approx(9.5)  # done before the stall
    assert schedule.finish(9.99, 0.02) == pytest.approx(10.07)
    assert schedule.finish(10.01, 0.02) == pytest.approx(10.08)
    assert schedule.finish(10.1, 0.02) == pytest.approx(10.12)  # after it


def test_a_stall_delays_every_slot_so_queued_reads_wait_it_out_too():
    schedule = _stalled_at(0.0)
    slots, plain = Slots(3), Slots(3)
    slots.finish = schedule.finish
    stalled = [slots.reserve(0.0, 0.02, 10.0) for _ in range(4)]
    even = [plain.reserve(0.0, 0.02, 10.0) for _ in range(4)]
    assert stalled == pytest.approx([e + 0.06 for e in even])


class FakeClock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_backend_stalls_after_the_work_already_booked_so_no_booked_answer_moves(monkeypatch):
    clock, slept = FakeClock(), []

    async def record_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("swarmgauge.targets.mark.backend.asyncio.sleep", record_sleep)
    knobs = BackendKnobs(
        read_delay=0.01, stat_head=True, backend_concurrency=3, delay_jitter=0, stall_length=0.06, stall_reads=4
    )
    backend = SimulatedBackend(knobs, clock=clock)

    async def reads(count: int) -> None:
        for _ in range(count):
            await backend.read(clock.now + 10)

    asyncio.run(reads(5))
    assert backend.stalls is not None and backend.stalls.stalls == 1  # after the fourth read
    assert slept[:3] == pytest.approx([0.02, 0.02, 0.02])  # booked before any stall began
    assert slept[3] == pytest.approx(0.04 + 0.06)  # queued behind the first slot, then the stall


def test_a_schedule_refuses_a_stall_after_every_read():
    with pytest.raises(ValueError):
        StallSchedule(0.06, 1)
