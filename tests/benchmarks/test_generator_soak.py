"""The soak benchmark's arithmetic and its probe's comparisons (no run, no figure of this machine asserted)."""

import tracemalloc
from collections import Counter

import pytest

from benchmarks import generator_soak, soak_probe

MIB = 2**20


def test_growth_is_measured_from_the_end_of_the_settle_time_and_the_settle_growth_is_reported_beside_it():
    samples = [(0.0, 10 * MIB), (30.0, 80 * MIB), (60.0, 100 * MIB), (90.0, 101 * MIB), (120.0, 102 * MIB)]
    result = generator_soak.growth(samples, settle=60.0)
    assert result["rss_first_sample_mib"] == 10.0 and result["settle_growth_mib"] == 90.0
    assert result["rss_after_settle_mib"] == 100.0 and result["rss_end_mib"] == 102.0
    assert result["growth_mib"] == 2.0 and result["growth_percent"] == 2.0 and result["rss_max_mib"] == 102.0


def test_too_few_samples_after_settling_give_no_figure_rather_than_a_wrong_one():
    result = generator_soak.growth([(0.0, MIB), (59.0, 2 * MIB), (60.0, 3 * MIB)], settle=60.0)
    assert result["growth_percent"] is None and result["rss_end_mib"] is None


def test_the_stream_state_is_filled_when_the_requests_so_far_reach_the_number_asked_for():
    timeline = "time,step,requests,failures,p50_ms,p99_ms\n1002.0,0,30,0,1,2\n1000.0,0,10,0,1,2\n1001.0,0,20,0,1,2\n"
    points = generator_soak.cumulative_requests(timeline, began_wall=990.0)
    assert points == [(10.0, 10), (11.0, 30), (12.0, 60)]
    assert generator_soak.filled_at(points, 30) == 11.0
    assert generator_soak.filled_at(points, 61) is None


@pytest.mark.parametrize("argv", [["--minutes", "0"], ["--minutes", "5", "--settle", "5"], ["--settle", "-1"]])
def test_bad_options_are_refused_before_any_run(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        generator_soak.main(argv)
    assert exited.value.code == 2
    assert "must be" in capsys.readouterr().err


def test_the_probe_names_the_line_that_kept_memory():
    kept = []
    tracemalloc.start(1)
    try:
        before = tracemalloc.take_snapshot()
        kept.extend(bytearray(4096) for _ in range(64))
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    top = soak_probe.top_growths(before, after, top=5)
    assert top[0]["site"].endswith("test_generator_soak.py:" + str(_line_of("kept.extend(")))
    assert top[0]["growth_kib"] >= 256 and len(top) <= 5


def test_the_probe_counts_only_types_that_grew():
    grown = soak_probe.count_growths(Counter(tuple=10, dict=5, Row=1), Counter(tuple=12, dict=5, Row=4, list=1))
    assert grown == [
        {"type": "Row", "growth": 3, "count": 4},
        {"type": "tuple", "growth": 2, "count": 12},
        {"type": "list", "growth": 1, "count": 1},
    ]


def _line_of(text: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line and "_line_of" not in line)
