"""The demarkus page's Reads in the index: every read row of the page beside the measured one, fresh rows timed as
the page's tool times them, the rows not attempted named with a reason, errors counted over every read workload."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_demarkus_reads import WHY, fresh_setting, reads
from swarmgauge.reports.index_figures import SET_BY, PageSection
from tests.reports.test_index import step, write_steps


def runs_of(tmp_path: Path, *, handshake_failures: int = 0) -> dict[str, Path | None]:
    folders = {name: tmp_path / name for name in ("reads", "fresh", "lookup", "list")}
    pooled = [(1, 50.0, 21.0, 27.0), (4, 157.0, 24.0, 40.0), (16, 160.0, 99.0, 116.0), (64, 158.0, 400.0, 420.0)]
    pooled.append((256, 158.0, 1600.0, 1650.0))
    write_steps(folders["reads"], [step(n, *row[:1], "FETCH", "/corpus", *row[1:]) for n, row in enumerate(pooled)])
    fresh = []
    for n, users in enumerate((16, 64)):
        fresh.append(step(n, users, "FETCH", "/corpus", 150.0, 90.0, 140.0))  # the request alone
        fresh.append(step(n, users, "FETCH+dial", "/corpus", 150.0, 97.0 * (n + 1), 150.0))  # as the page times it
        fresh.append(step(n, users, "QUIC", "handshake", 150.0, 7.0, 20.0, failures=handshake_failures))
    write_steps(folders["fresh"], fresh)
    write_steps(
        folders["lookup"],
        [step(0, 16, "LOOKUP", "/", 159.0, 100.0, 120.0), step(1, 64, "LOOKUP", "/", 158.0, 405.0, 430.0)],
    )
    write_steps(folders["list"], [step(0, 16, "LIST", "/corpus/{topic}", 159.0, 100.0, 118.0)])
    return dict(folders)


def test_every_read_row_of_the_page_stands_beside_the_measured_one(tmp_path):
    section = PageSection()
    table = reads(runs_of(tmp_path), section)
    steps = [label for label in table["Step"] if label]
    assert steps == [
        "QUIC FETCH, pooled connections",
        "QUIC FETCH, fresh connection per request",
        "QUIC LOOKUP",
        "QUIC LIST",
    ]
    assert list(table["Workers"]) == [1, 4, 16, 64, 256, 16, 64, 16, 64, 16]
    assert list(table["page req/s"]) == ["53", "160", "159", "158", "151", "157", "159", "159", "158", "159"]
    assert list(table["page p99"]) == ["26 ms", "45 ms", "166 ms", "486 ms", "1.79 s"] + [
        "323 ms",
        "1.16 s",
        "124 ms",
        "506 ms",
        "185 ms",
    ]
    # the fresh rows are the whole iteration, dial included (demarkus-loadtest's timing), not the request alone
    assert list(table["p50"].iloc[5:7]) == ["97 ms", "194 ms"]
    assert section.checks[0].holds and "ceiling 157 to 160 req/s" in section.checks[0].text
    assert any("0 errors in" in check.text and check.holds for check in section.checks)


def test_the_rows_not_attempted_are_named_with_a_reason_and_a_failed_handshake_is_an_error(tmp_path):
    section = PageSection()
    reads(runs_of(tmp_path, handshake_failures=3), section)
    rows = dict(section.not_reproducible)
    assert any("pods" in row and "cores" in row for row in rows)
    assert any("256 open connections" in row for row in rows)
    assert all(reason and "\n" not in reason for reason in rows.values())
    errors = [check for check in section.checks if "errors in" in check.text]
    assert errors and not errors[0].holds and errors[0].text.startswith("6 errors in")


def test_a_page_without_read_runs_shows_no_reads_table(tmp_path):
    section = PageSection()
    table = reads({"reads": None, "fresh": None}, section)
    assert table.empty and not section.checks
    assert section.not_reproducible  # still named: the index says which rows this page cannot attempt


def test_a_row_that_does_not_hold_says_why_and_the_rows_that_hold_say_nothing(tmp_path):
    section = PageSection()
    table = reads(runs_of(tmp_path), section)
    why = dict(zip(range(len(table)), table[WHY]))
    assert "first-come queue" in why[2]  # pooled 16 users: p99 116 ms against the page's 166 ms (0.70x)
    assert why[0] == "" and why[3] == ""  # pooled 1 and 64 users hold
    assert all("\n" not in reason for reason in why.values())


def test_the_fresh_rows_name_the_lossy_path_and_the_clients_timer_the_run_used(tmp_path):
    runs = runs_of(tmp_path)
    options = {"mark_embedded_args": "--backend-concurrency 3 --initial-loss 0.3", "mark_initial_rtt": 0.1}
    (tmp_path / "fresh" / "run.json").write_text(json.dumps({"options": options}))
    setting = fresh_setting(runs)
    assert setting.startswith("--backend-concurrency 3 --initial-loss 0.3 --mark-initial-rtt 0.1")
    assert "30% of dials lose their first flight and wait the client's 200 ms retransmit timer" in setting
    (tmp_path / "fresh" / "run.json").write_text(json.dumps({"options": {"mark_embedded_args": "--read-delay-ms 9"}}))
    assert "--initial-loss" not in fresh_setting(runs)  # a run without the lossy path is not said to have one


def test_the_rows_past_the_knee_name_the_backend_stalls_only_when_the_run_had_them(tmp_path):
    runs = runs_of(tmp_path)
    stalled = "--backend-concurrency 3 --backend-stall-ms 60 --backend-stall-reads 640"
    for name, args in (("reads", stalled), ("lookup", "--backend-concurrency 3")):
        (tmp_path / name / "run.json").write_text(json.dumps({"options": {"mark_embedded_args": args}}))
    table = reads(runs, PageSection())
    set_by = dict(zip(zip(table["Step"].replace("", pd.NA).ffill(), table["Workers"]), table[SET_BY], strict=True))
    assert "--backend-stall-ms 60 --backend-stall-reads 640" in set_by[("QUIC FETCH, pooled connections", 16)]
    assert "stands still 60 ms after about every 640 reads" in set_by[("QUIC FETCH, pooled connections", 64)]
    assert "stall" not in set_by[("QUIC FETCH, pooled connections", 4)]  # the knee is the slots' alone
    assert "stall" not in set_by[("QUIC LOOKUP", 16)]  # a run without them is not said to have them


def test_a_sixteen_user_lookup_tail_past_the_pages_says_the_pages_own_rows_differ(tmp_path):
    runs = runs_of(tmp_path)
    write_steps(
        tmp_path / "lookup",
        [step(0, 16, "LOOKUP", "/", 159.0, 100.0, 160.0), step(1, 64, "LOOKUP", "/", 158.0, 405.0, 470.0)],
    )
    table = reads(runs, PageSection())
    lookup16 = table[(table["Step"] == "QUIC LOOKUP") & (table["Workers"].astype(int) == 16)]
    assert "124 (LOOKUP), 166 (FETCH) and 185 ms (LIST)" in str(lookup16[WHY].iloc[0])
    # the cost per verb tried, with where its numbers come from
    assert "no cost per verb holds it" in str(lookup16[WHY].iloc[0])
    assert "benchmarks/verb_cost_model.py" in str(lookup16[WHY].iloc[0])


def test_a_sixty_four_user_lookup_at_littles_mean_shows_the_arithmetic_of_the_pages_own_figures(tmp_path):
    table = reads(runs_of(tmp_path), PageSection())  # LOOKUP at 64 users: p50 405 ms against the page's 501
    why = dict(zip(zip(table["Step"].replace("", pd.NA).ffill(), table["Workers"]), table[WHY], strict=True))
    lookup64 = str(why[("QUIC LOOKUP", 64)])
    assert "64 / 158 req/s = 405 ms" in lookup64 and "2 x 405 - 501" in lookup64
    assert "158 req/s x 501 ms = 79 reads in flight from 64 workers" in lookup64


def test_a_sixteen_user_list_at_littles_mean_says_what_its_p50_would_need_of_the_bucket(tmp_path):
    table = reads(runs_of(tmp_path), PageSection())  # LIST at 16 users: p50 100 ms against the page's 80
    why = str(table[table["Step"] == "QUIC LIST"][WHY].iloc[0])
    assert "16 / 159 req/s = 101 ms" in why and "200 reads/s between stalls" in why
