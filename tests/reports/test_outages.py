"""The outage section marks the windows in which most requests failed, and nothing in a healthy run."""

from swarmgauge.reports import outages


def write_timeline(path, rows):
    path.write_text(
        "time,step,requests,failures,p50_ms,p99_ms\n" + "".join(f"{t},0,{n},{f},1.0,2.0\n" for t, n, f in rows)
    )


def test_a_restart_is_one_window_across_the_silent_buckets_of_a_backoff(tmp_path):
    write_timeline(
        tmp_path / "timeline.csv",
        [(1000, 50, 0), (1001, 50, 1), (1002, 4, 4), (1005, 2, 2), (1006, 3, 2), (1007, 50, 0), (1008, 50, 0)],
    )
    section = outages.section(tmp_path)
    window = section.summary["windows"]
    # the kill fell inside bucket 1001 (1 of its 50 failed): it joins; the window lasts until answers come (1007)
    assert window == [{"start": 1001.0, "end": 1007.0, "requests": 59, "failures": 9}]
    assert "1 outage window" in section.markdown and "6 s in all" in section.markdown


def test_a_healthy_run_or_no_timeline_has_no_section(tmp_path):
    assert outages.section(tmp_path) is None
    write_timeline(tmp_path / "timeline.csv", [(1000, 50, 1), (1001, 50, 0)])
    assert outages.section(tmp_path) is None


def test_two_outages_are_two_windows():
    found = outages.outages([0, 1, 2, 3, 4], [10, 10, 10, 10, 10], [9, 0, 10, 10, 0])
    assert [(o.start, o.end) for o in found] == [(0, 1), (2, 4)]


def test_the_window_lasts_over_the_silence_of_a_backoff_until_the_first_answers():
    # failures at 10..11, then clients back off (nothing recorded) until the target answers at 14
    found = outages.outages([9, 10, 11, 14, 15], [50, 4, 2, 40, 50], [0, 4, 2, 0, 0])
    assert [(o.start, o.end, o.requests, o.failures) for o in found] == [(10, 14, 6, 6)]


def test_a_recovery_bucket_with_failures_joins_the_window_it_follows():
    found = outages.outages([9, 10, 12, 13], [50, 4, 40, 50], [0, 4, 3, 0])
    assert [(o.start, o.end, o.requests, o.failures) for o in found] == [(10, 13, 44, 7)]


def test_a_silence_longer_than_any_backoff_is_the_load_stopping_not_the_outage():
    found = outages.outages([10, 11, 30], [4, 4, 50], [4, 4, 0])
    assert [(o.start, o.end) for o in found] == [(10, 12)]


def test_a_bucket_between_two_windows_joins_only_the_first():
    found = outages.outages([0, 1, 2, 3, 4], [10, 10, 10, 10, 10], [9, 2, 10, 0, 0])
    assert [(o.start, o.end, o.requests, o.failures) for o in found] == [(0, 2, 20, 11), (2, 3, 10, 10)]
