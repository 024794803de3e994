"""The backend's stalls: every read in service or queued sits one out, at seeded moments about ``every`` apart."""

from __future__ import annotations

import pytest

from swarmgauge.targets.mark.pacing import Slots
from swarmgauge.targets.mark.stalls import StallSchedule


def test_work_that_spans_a_stall_ends_the_stall_later_and_work_between_stalls_is_untouched():
    schedule = StallSchedule(0.06, 4.0)
    stall = schedule.next_stall(100.0)
    assert 100.0 + 2.0 <= stall <= 100.0 + 6.0  # between half and one and a half of ``every`` after start-up
    assert schedule.finish(stall - 0.01, 0.02) == pytest.approx(stall - 0.01 + 0.02 + 0.06)
    assert schedule.finish(stall + 0.07, 0.02) == pytest.approx(stall + 0.09)


def test_work_begun_inside_a_stall_waits_for_its_end():
    schedule = StallSchedule(0.06, 4.0)
    stall = schedule.next_stall(0.0)
    assert schedule.finish(stall + 0.01, 0.02) == pytest.approx(stall + 0.06 + 0.02)


def test_stalls_come_about_every_period_and_two_schedules_with_one_seed_agree():
    one, two = StallSchedule(0.06, 4.0), StallSchedule(0.06, 4.0)
    starts = [one.next_stall(0.0)]
    while starts[-1] < 100.0:
        starts.append(one.next_stall(starts[-1]))
    assert all(2.0 <= b - a <= 6.0 for a, b in zip(starts, starts[1:], strict=False))
    assert 20 <= len(starts) <= 30  # 25 on average
    assert [one.finish(t, 0.5) for t in range(0, 100, 3)] == [two.finish(t, 0.5) for t in range(0, 100, 3)]


def test_a_stall_delays_every_slot_so_queued_reads_wait_it_out_too():
    schedule = StallSchedule(0.06, 4.0)
    stall = schedule.next_stall(0.0)
    slots, plain = Slots(3), Slots(3)
    slots.finish = schedule.finish
    start = stall - 0.005
    stalled = [slots.reserve(start, 0.02, 10.0) for _ in range(4)]
    even = [plain.reserve(start, 0.02, 10.0) for _ in range(4)]
    assert stalled == pytest.approx([e + 0.06 for e in even])


def test_a_schedule_refuses_stalls_that_last_as_long_as_the_gaps():
    with pytest.raises(ValueError):
        StallSchedule(4.0, 4.0)
