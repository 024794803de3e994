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
    assert window == [{"start": 1002.0, "end": 1007.0, "requests": 9, "failures": 8}]
    assert "1 outage window" in section.markdown and "5 s in all" in section.markdown


def test_a_healthy_run_or_no_timeline_has_no_section(tmp_path):
    assert outages.section(tmp_path) is None
    write_timeline(tmp_path / "timeline.csv", [(1000, 50, 1), (1001, 50, 0)])
    assert outages.section(tmp_path) is None


def test_two_outages_are_two_windows():
    found = outages.outages([0, 1, 2, 3, 4], [10, 10, 10, 10, 10], [9, 0, 10, 10, 0])
    assert [(o.start, o.end) for o in found] == [(0, 1), (2, 4)]
