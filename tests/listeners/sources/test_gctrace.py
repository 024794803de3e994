"""gctrace source: real Go 1.2x gctrace lines, rotation, truncation, partial lines and other writers."""

import os

import pytest

from swarmgauge.listeners.sources import MIB, SourceError, parse_source
from swarmgauge.listeners.sources.gctrace import parse_gc_line

# as printed by Go 1.21-1.23 with GODEBUG=gctrace=1 (and one Go 1.18 line, before stacks/globals were added)
GO_LINES = [
    "gc 1 @0.012s 2%: 0.011+0.52+0.003 ms clock, 0.045+0.18/0.40/0.32+0.014 ms cpu, 4->4->0 MB, 4 MB goal, "
    "0 MB stacks, 0 MB globals, 4 P",
    "gc 12 @3.201s 1%: 0.018+1.2+0.003 ms clock, 0.14+0.5/1.0/0+0.024 ms cpu, 4->4->2 MB, 5 MB goal, "
    "0 MB stacks, 0 MB globals, 8 P",
    "gc 13 @4.877s 1%: 0.030+1.1+0.027 ms clock, 0.24+0.20/1.8/3.9+0.21 ms cpu, 7->7->3 MB, 8 MB goal, "
    "0 MB stacks, 0 MB globals, 8 P (forced)",
]
GO118_LINE = "gc 3 @0.105s 1%: 0.040+1.4+0.021 ms clock, 0.16+0.32/1.2/2.2+0.084 ms cpu, 4->4->1 MB, 5 MB goal, 4 P"
OTHER_WRITERS = [
    '{"level":"info","msg":"GET /search 200","took_ms":6}',
    "2026/12/02 10:41:07 brain-serve listening on 127.0.0.1:8630",
    "scvg: 0 MB released",
    "gc is fine, said the logger",
]


def readings(source) -> dict[str, float]:
    return {r.metric: r.value for r in source.sample()}


def test_parses_go_lines_with_and_without_stacks():
    gc = parse_gc_line(GO_LINES[1])
    assert (gc.number, gc.heap_start, gc.heap_end, gc.live_heap, gc.heap_goal, gc.procs) == (
        12,
        4 * MIB,
        4 * MIB,
        2 * MIB,
        5 * MIB,
        8,
    )
    old = parse_gc_line(GO118_LINE)
    assert old.live_heap == 1 * MIB and old.stacks is None
    assert parse_gc_line("2026-12-02T10:41:07Z stderr F " + GO_LINES[2]).number == 13
    assert all(parse_gc_line(line) is None for line in OTHER_WRITERS)


def test_follows_appends_and_ignores_other_writers(tmp_path):
    log = tmp_path / "brain.log"
    log.write_text(OTHER_WRITERS[1] + "\n" + GO_LINES[0] + "\n")
    source = parse_source(f"gctrace:{log}")
    assert readings(source)["gc_count"] == 1
    with log.open("a") as f:
        f.write(OTHER_WRITERS[0] + "\n" + GO_LINES[1] + "\n" + OTHER_WRITERS[2] + "\n")
    got = readings(source)
    assert got["gc_count"] == 12 and got["live_heap_bytes"] == 2 * MIB and got["heap_goal_bytes"] == 5 * MIB
    assert source.sample() == []  # no new GC: no point (the series' points are the GCs)


def test_partial_line_waits_for_its_newline(tmp_path):
    log = tmp_path / "brain.log"
    log.write_text(GO_LINES[0] + "\n" + GO_LINES[2][:40])
    source = parse_source(f"gctrace:{log}")
    assert readings(source)["gc_count"] == 1
    with log.open("a") as f:
        f.write(GO_LINES[2][40:] + "\n")
    assert readings(source)["gc_count"] == 13


def test_rotation_by_rename_reads_the_old_tail_then_the_new_file(tmp_path):
    log = tmp_path / "brain.log"
    log.write_text(GO_LINES[0] + "\n")
    source = parse_source(f"gctrace:{log}")
    readings(source)
    with log.open("a") as f:
        f.write(GO_LINES[1] + "\n")
    os.rename(log, tmp_path / "brain.log.1")
    log.write_text(OTHER_WRITERS[1] + "\n")
    assert readings(source)["gc_count"] == 12
    with log.open("a") as f:
        f.write(GO_LINES[2] + "\n")
    assert readings(source)["gc_count"] == 13


def test_copytruncate_is_followed(tmp_path):
    log = tmp_path / "brain.log"
    log.write_text("\n".join(GO_LINES[:2]) + "\n")
    source = parse_source(f"gctrace:{log}")
    assert readings(source)["gc_count"] == 12
    log.write_text(GO118_LINE + "\n")  # truncated in place, then a new GC
    assert readings(source)["gc_count"] == 3


def test_first_poll_seeds_from_the_tail_of_a_long_log(tmp_path):
    log = tmp_path / "brain.log"
    with log.open("w") as f:
        for _ in range(3000):
            f.write(OTHER_WRITERS[0] + "\n")
        f.write(GO_LINES[2] + "\n")
    assert readings(parse_source(f"gctrace:{log}"))["gc_count"] == 13


def test_missing_log_is_a_source_error_until_it_appears(tmp_path):
    log = tmp_path / "later.log"
    source = parse_source(f"gctrace:{log}")
    with pytest.raises(SourceError, match="does not exist"):
        source.sample()
    log.write_text(OTHER_WRITERS[0] + "\n")
    assert source.sample() == []
    with log.open("a") as f:
        f.write(GO_LINES[0] + "\n")
    assert readings(source)["gc_count"] == 1


def test_each_gc_since_the_last_poll_is_one_point_and_the_first_poll_only_the_newest(tmp_path):
    log = tmp_path / "go.log"
    log.write_text(GO_LINES[0] + "\n" + GO_LINES[1] + "\n")
    source = parse_source(f"gctrace:{log}")
    assert [r.value for r in source.sample() if r.metric == "gc_count"] == [12]
    with log.open("a") as f:
        f.write(GO_LINES[2] + "\n" + OTHER_WRITERS[0] + "\n" + GO_LINES[2].replace("gc 13", "gc 14") + "\n")
    assert [r.value for r in source.sample() if r.metric == "gc_count"] == [13, 14]
    assert source.sample() == []
