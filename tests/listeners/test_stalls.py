"""Generator stalls: a late wake of the watch is a stall, and each request in flight during one counts once."""

from __future__ import annotations

import csv
import io

import pytest

from swarmgauge.core.hooks import StepInfo
from swarmgauge.listeners.stalls import STALL_MS, WATCH_INTERVAL, StallWatch, watch_loop
from swarmgauge.listeners.step_stats import StepMerge, StepRecorder
from swarmgauge.listeners.steps_csv import stalled_step, step_rows, write_rows

T0 = 1_000_000.0


def recorded() -> tuple[StallWatch, list[tuple[int, float, int]]]:
    calls: list[tuple[int, float, int]] = []
    return StallWatch(lambda step, ms, n: calls.append((step, round(ms), n))), calls


def test_a_wake_later_than_the_threshold_is_a_stall_and_an_on_time_one_is_not():
    watch, calls = recorded()
    watch.note_wake(WATCH_INTERVAL, T0 + 1.0, (STALL_MS - 1) / 1000.0)
    assert not watch.stalls
    watch.note_wake(WATCH_INTERVAL, T0 + 2.0, 0.4)
    assert [(s.begin, s.end) for s in watch.stalls] == [(pytest.approx(T0 + 1.6), T0 + 2.0)]
    assert calls == []  # no request was in flight


def test_a_request_finished_during_the_stall_before_the_watch_woke_is_counted_once():
    watch, calls = recorded()
    watch.note_request(3, T0 + 0.0, 100.0)  # done at 0.1 s: before the stall
    watch.note_request(3, T0 + 0.5, 900.0)  # in flight 0.5 .. 1.4 s, recorded before the watch noticed
    watch.note_wake(WATCH_INTERVAL, T0 + 2.0, 1.0)  # the loop was held from 1.0 to 2.0 s
    assert calls == [(3, 1000, 1)]
    watch.note_wake(WATCH_INTERVAL, T0 + 2.06, 0.0)  # an on-time wake notes nothing more
    assert calls == [(3, 1000, 1)]


def test_a_request_recorded_after_the_stall_was_noted_is_counted_against_it():
    watch, calls = recorded()
    watch.note_wake(WATCH_INTERVAL, T0 + 2.0, 1.0)
    watch.note_request(4, T0 + 1.8, 300.0)  # started inside the stall
    watch.note_request(4, T0 + 2.5, 10.0)  # after it
    assert calls == [(4, 1000, 1)]


def test_back_to_back_late_wakes_are_one_stall_and_its_steps_learn_the_whole_length():
    watch, calls = recorded()
    watch.note_request(2, T0 + 0.9, 200.0)
    watch.note_wake(WATCH_INTERVAL, T0 + 1.5, 0.5)  # 1.0 .. 1.5
    watch.note_wake(WATCH_INTERVAL, T0 + 2.2, 0.6)  # 1.6 .. 2.2, one stall with the first
    assert len(watch.stalls) == 1
    assert calls == [(2, 500, 1), (2, 1200, 0)]


def test_the_step_row_carries_the_longest_stall_and_the_requests_it_hit():
    recorder = StepRecorder()
    watch = StallWatch(recorder.note_stall)
    for i in range(5):
        recorder.record(1, "FETCH", "/a", 90.0, False)
        watch.note_request(1, T0 + i * 0.1, 90.0)
    watch.note_wake(WATCH_INTERVAL, T0 + 1.0, 0.7)  # 0.3 .. 1.0: the requests from 0.3 s on were in flight
    merged = StepMerge()
    merged.add_batch("w1", recorder.drain())
    infos = [StepInfo(index=0, label="1 users", users=1, rate=None, started_at=T0 - 10)]
    infos.append(StepInfo(index=1, label="4 users", users=4, rate=None, started_at=T0 - 1))
    rows = list(csv.DictReader(io.StringIO(write_rows(step_rows(merged, infos, T0 + 5, [])))))
    step1 = [r for r in rows if r["step"] == "1"]
    assert {r["generator_stall_ms"] for r in step1} == {"700.0"}
    assert {r["stalled_requests"] for r in step1} == {"2"}  # the ones in flight from 0.3 s and 0.4 s
    assert {r["generator_stalled"] for r in step1} == {"True"}
    assert [r["generator_stalled"] for r in rows if r["step"] == "0"] == ["False"]


def test_a_step_is_flagged_only_when_the_stall_hit_enough_requests_to_reach_its_p99():
    assert stalled_step(1, 100) and stalled_step(44, 1610)
    assert not stalled_step(4, 1245) and not stalled_step(0, 0)


def test_the_watch_loop_ends_when_there_is_no_current_watch():
    watch, _calls = recorded()
    sleeps: list[float] = []
    answers = iter([watch, watch, None])
    watch_loop(lambda: next(answers), sleeps.append)
    assert sleeps == [WATCH_INTERVAL] * 3


def test_an_on_time_wake_forgets_the_requests_recorded_before_it_since_no_later_stall_can_reach_them():
    watch, calls = recorded()
    for i in range(50):
        watch.note_request(1, T0 + i * 0.001, 2.0)
    watch.note_wake(WATCH_INTERVAL, T0 + 0.06, 0.0)  # on time, no stall noted yet
    assert watch.kept() == 0  # the ring holds what came since the last on-time wake, not 20,000 requests
    watch.note_request(1, T0 + 0.07, 2.0)
    watch.note_wake(WATCH_INTERVAL, T0 + 1.0, 0.8)  # the loop was held from 0.2 s: none of them was in flight
    assert calls == []
    assert watch.kept() == 1


def test_an_on_time_wake_just_after_a_stall_keeps_the_ring_for_a_stall_that_merges_with_it():
    watch, calls = recorded()
    watch.note_wake(WATCH_INTERVAL, T0 + 1.0, 0.5)  # 0.5 .. 1.0
    watch.note_request(2, T0 + 1.01, 20.0)  # after the stall, in the gap
    watch.note_wake(WATCH_INTERVAL, T0 + 1.05, 0.0)  # on time, but a stall beginning now merges with the last one
    assert watch.kept() == 1
    watch.note_wake(WATCH_INTERVAL, T0 + 1.4, 0.3)  # 1.1 .. 1.4: one stall with the first, 0.5 .. 1.4
    assert (2, 900, 1) in calls
