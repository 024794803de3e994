"""The host-speed probe: a fixed piece of work timed in this process's CPU, its median over rounds, and the
slowdown against the reference machine."""

from __future__ import annotations

import pytest

from swarmgauge.core import host_speed


def test_a_round_is_timed_in_this_processes_cpu_and_grows_with_its_work():
    small, large = host_speed.probe_once(50), host_speed.probe_once(2_000)
    assert 0 <= small < large


def test_the_figure_is_the_median_of_the_rounds(monkeypatch):
    spent = iter([9.0, 1.0, 5.0])
    monkeypatch.setattr(host_speed, "probe_once", lambda units=host_speed.UNITS: next(spent))
    assert host_speed.probe_ms(3) == 5.0


def test_no_rounds_still_takes_one(monkeypatch):
    monkeypatch.setattr(host_speed, "probe_once", lambda units=host_speed.UNITS: 7.0)
    assert host_speed.probe_ms(0) == 7.0


@pytest.mark.parametrize(("measured", "expected"), [(60.0, 1.0), (90.0, 1.5), (30.0, 0.5)])
def test_the_slowdown_is_the_measured_over_the_reference(measured, expected):
    assert host_speed.slowdown(measured, 60.0) == pytest.approx(expected)


def test_the_rounds_run_with_the_cyclic_collector_off_and_leave_it_as_they_found_it(monkeypatch):
    import gc

    seen = []
    monkeypatch.setattr(host_speed, "probe_once", lambda units=host_speed.UNITS: seen.append(gc.isenabled()) or 1.0)
    host_speed.probe_ms(2)
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        host_speed.probe_ms(1)
        assert not gc.isenabled()
    finally:
        gc.enable()
