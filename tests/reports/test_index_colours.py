"""The index's honesty over hand-made demo folders: each row green, amber or red against its tolerance, a figure a
stand-in fixes never green, the rows not reproducible listed with their reason, exits graded against the exit each
workload declares, a page with a red row never holding, and one plot per page."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from swarmgauge.reports import index_pages
from swarmgauge.reports.index import table_of, write_index
from swarmgauge.reports.index_figures import (
    Check,
    PageSection,
    beside,
    figure,
    ms,
    rate,
    read_steps,
    requests_of,
    step_table,
)
from tests.reports.test_index import manifest, page, reads

PAGE_POOLED = {1: (53, 20, 26), 4: (160, 21, 45), 16: (159, 100, 166), 64: (158, 423, 486), 256: (151, 1770, 1790)}
#: users, req/s, p50, p99 against the page's 1: (53, 20, 26), 4: (160, 21, 45), 16: (159, 100, 166),
#: 64: (158, 423, 486), 256: (151, 1770, 1790)
READS = [
    (1, 50.0, 21.0, 27.0),  # 0.94x 1.05x 1.04x: green at 20 %
    (4, 158.0, 24.0, 40.0),  # 0.99x 1.14x 0.89x: green
    (16, 160.0, 99.0, 150.0),  # green
    (64, 157.0, 550.0, 500.0),  # p50 1.30x: past 20 %, within 40 %: amber
    (256, 150.0, 1800.0, 4000.0),  # p99 2.23x: red
]


def plain_ramp_section(runs: dict[str, Path | None]) -> PageSection:
    """A fake demarkus section: the pooled ramp beside the page's figures at one 20 % tolerance and no figure set by
    a stand-in (the real section marks the ceiling as the stand-in's), so the grading itself is what is tested."""
    pooled = requests_of(read_steps(runs.get("reads")), "FETCH")
    section = PageSection()
    if not pooled.empty:
        section.tables.append(("Reads", step_table(pooled, PAGE_POOLED, "QUIC FETCH, pooled", "Step", tolerance=0.2)))
        past = [float(v) for v in pooled[pooled["users"] >= 4]["rps"]]
        if past:
            section.checks.append(Check(True, f"ceiling {min(past):.0f} to {max(past):.0f} req/s from 4 workers on"))
        section.checks.append(Check(True, "zero errors"))
    return section


@pytest.fixture
def plain_ramp(monkeypatch):
    monkeypatch.setitem(index_pages.SECTIONS, "demarkus", plain_ramp_section)


def section_of(text: str, name: str) -> str:
    return text.split(f"## {name}:")[1].split("\n## ")[0]


@pytest.mark.usefixtures("plain_ramp")
def test_each_row_is_green_amber_or_red_against_its_tolerance_shown_beside_it(tmp_path):
    reads(tmp_path, READS)
    manifest(tmp_path, [page("demarkus", "reads")])
    markdown, html = write_index(tmp_path)

    table = table_of(tmp_path, "demarkus")
    assert list(table["row"]) == ["green", "green", "green", "amber", "red"]
    assert set(table["tolerance"]) == {"±20 %"}
    text = markdown.read_text()
    assert "| 🟡 amber | ±20 %" in text and "| 🔴 red   | ±20 %" in text
    assert "green when every figure's ratio x (measured / the page's) is within the row's tolerance of 1" in text
    page_html = html.read_text()
    assert "<td style='background:#fbe3a1;'>1.30x</td>" in page_html  # the figure that made the row amber
    assert "<td style='background:#f4bcc0;'>2.23x</td>" in page_html


@pytest.mark.usefixtures("plain_ramp")
def test_a_page_with_a_red_row_never_holds_and_its_checks_are_shown_apart(tmp_path):
    reads(tmp_path, READS)
    manifest(tmp_path, [page("demarkus", "reads")])
    text = write_index(tmp_path)[0].read_text()
    verdict = "3 of 5 rows green, 1 amber, 1 red; 1 workload ended as declared"
    assert f"**Verdict:** 🔴 {verdict}" in text
    overview = next(line for line in text.splitlines() if line.startswith("| demarkus: "))
    assert f"| 🔴 {verdict} |" in overview and "| 2 of 2 hold " in overview  # every check holds: still red
    assert "holds" not in text.split("### Shape checks")[0]  # no "holds" before the checks, however they read
    assert "- holds: ceiling 150 to 160 req/s from 4 workers on" in text


@pytest.mark.usefixtures("plain_ramp")
def test_a_missing_measured_figure_is_red(tmp_path):
    reads(tmp_path, [(1, 50.0, 21.0, 27.0), (4, 158.0, 24.0, float("nan"))])
    manifest(tmp_path, [page("demarkus", "reads")])
    write_index(tmp_path)
    table = table_of(tmp_path, "demarkus")
    assert list(table["row"]) == ["green", "red"] and table["p99"].iloc[1] == ""


def fixture_page_section(runs: dict[str, Path | None]) -> PageSection:
    """A page section as the page helpers write it: figures a stand-in fixes, and rows not attempted."""
    section = PageSection()
    rows = [
        figure("writes/s, one writer", 0.67, 0.67, rate, tolerance=0.1, set_by="--commit-interval 1.5s"),
        figure("p50 per publish", 3020.0, 1510.0, ms, tolerance=0.1, set_by="--commit-interval 1.5s"),
        figure("p50 of the session's calls", 10.5, 10.0, ms, tolerance=0.1),
        figure("MCP sessions started", 150, None, rate),
    ]
    section.tables.append(("Writes", pd.DataFrame(rows)))
    ramp = pd.DataFrame([{"users": 4, "rps": 160.0, "p50_ms": 21.0, "p99_ms": 45.0}])
    section.tables.append(
        ("Reads", step_table(ramp, {4: (160, 21, 45)}, "pooled", "Step", tolerance=0.15, set_by="--backend-rps 160"))
    )
    section.not_reproducible += [
        ("pods' CPU and memory (GKE)", "a Go binary's pod memory on GKE: no Kubernetes here"),
        ("log spam past 4,096 sessions", "the Go library's log line; the embedded gateway has no such cap"),
    ]
    return section


@pytest.fixture
def fixture_page(monkeypatch, tmp_path):
    monkeypatch.setitem(index_pages.SECTIONS, "fixture", fixture_page_section)
    reads(tmp_path, [(1, 50.0, 21.0, 27.0)])  # a run folder for the workload to link to
    entry = page("fixture", "reads")
    entry["workloads"][0]["folder"] = "demarkus/reads"
    return entry


def test_a_figure_a_stand_in_fixes_is_never_green_and_says_its_setting(tmp_path, fixture_page):
    manifest(tmp_path, [fixture_page])
    markdown, html = write_index(tmp_path)
    writes = table_of(tmp_path, "fixture")
    assert list(writes["row"]) == ["set by the stand-in", "red", "green", "no ratio"]
    assert list(writes["stand-in"])[:3] == ["set by the stand-in: --commit-interval 1.5s"] * 2 + [""]
    assert list(writes["tolerance"]) == ["±10 %", "±10 %", "±10 %", ""]  # no tolerance where nothing is compared
    text = markdown.read_text()
    assert "| pooled | 4 " in text and "set by the stand-in: --backend-rps 160" in text
    assert "| ⚙️ set by the stand-in | ±15 %" in text  # a step on the page's figures, but the bucket sets them
    assert (
        "**Verdict:** 🔴 1 of 5 rows green, 1 red, 2 set by the stand-in, 1 no ratio; 2 rows not reproducible" in text
    )
    assert "<td style='background:#d6e0f5;'>1.00x</td>" in html.read_text()  # set, not green, though exact


def test_rows_not_reproducible_are_listed_with_their_reason(tmp_path, fixture_page):
    manifest(tmp_path, [fixture_page])
    markdown, html = write_index(tmp_path)
    section = section_of(markdown.read_text(), "fixture")
    assert "### Not reproducible here (2 rows)" in section
    assert "| pods' CPU and memory (GKE)   | a Go binary's pod memory on GKE: no Kubernetes here" in section
    assert "<td style='text-align:left'>log spam past 4,096 sessions</td>" in html.read_text()


@pytest.mark.usefixtures("plain_ramp")
def test_an_unexpected_exit_is_red_and_an_expected_one_is_labelled(tmp_path):
    reads(tmp_path, [(1, 50.0, 21.0, 27.0), (4, 158.0, 24.0, 40.0)])
    gate, broken = page("demarkus", "reads"), page("kneo", "backpressure")
    gate["workloads"][0] |= {"exit_code": 1, "expected_exit": 1}
    broken["workloads"][0] |= {"exit_code": 3, "folder": "demarkus/reads"}
    manifest(tmp_path, [gate, broken])
    markdown, html = write_index(tmp_path)
    text = markdown.read_text()
    demarkus, kneo = section_of(text, "demarkus"), section_of(text, "kneo")
    assert "| 🟢 exit 1 (expected) |" in demarkus and "**Verdict:** 🟢 2 of 2 rows green;" in demarkus
    assert "| 🔴 exit 3 (unexpected; declared 0) |" in kneo
    assert "**Verdict:** 🔴 " in kneo and "workloads not ending as declared: backpressure (exit 3" in kneo
    assert "<td style='background:#f4bcc0;text-align:left'>exit 3 (unexpected; declared 0)</td>" in html.read_text()


@pytest.mark.usefixtures("plain_ramp")
def test_a_workload_that_timed_out_is_red_unless_declared(tmp_path):
    reads(tmp_path, [(1, 50.0, 21.0, 27.0)])
    entry = page("demarkus", "reads")
    entry["workloads"][0]["exit_code"] = -1
    manifest(tmp_path, [entry])
    text = write_index(tmp_path)[0].read_text()
    assert "| 🔴 timed out (unexpected; declared 0) |" in text and "**Verdict:** 🔴 1 of 1 rows green" in text


def test_one_plot_per_page_a_chart_in_the_html_and_a_png_linked_from_the_markdown(tmp_path):
    reads(tmp_path, READS)
    manifest(tmp_path, [page("demarkus", "reads")])
    markdown, html = write_index(tmp_path)
    plot = tmp_path / "index_plots" / "demarkus.png"
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert "](index_plots/demarkus.png)" in markdown.read_text()
    page_html = html.read_text()
    assert '<div id="chart-index-demarkus" class="plotly-graph-div"' in page_html and "<img" not in page_html
    assert "the reads ramp: req/s and p50 against users" in page_html  # the chart's caption
    assert not re.search(r"<script[^>]*src=", page_html) and page_html.count("<script type='text/javascript'>") == 1


def test_the_index_ramp_chart_puts_the_pages_points_beside_the_measured():
    from swarmgauge.reports.index_charts import ramp_figure

    measured = pd.DataFrame({"users": [1, 4], "rps": [45.0, 155.0], "p50_ms": [22.6, 25.3]})
    figure = ramp_figure("demarkus reads", "req/s", [("pooled FETCH", {1: (53, 20, 26), 4: (160, 21, 45)}, measured)])
    traces = {(t.name, t.xaxis): t for t in figure.data}
    page_rate, measured_p50 = traces[("pooled FETCH: page", "x")], traces[("pooled FETCH: measured", "x2")]
    assert list(page_rate.y) == [53, 160] and page_rate.line.dash == "dot"
    assert (
        list(measured_p50.y) == [22.6, 25.3] and measured_p50.hovertext[1] == "pooled FETCH, measured: 4 users, 25.3 ms"
    )


def memory_page_section(runs: dict[str, Path | None]) -> PageSection:
    """A row of several figures, one of which a stand-in's setting fixes (as the brain page's leak size)."""
    row: dict = {"": "before-fix"}
    beside(row, "p50", 1500.0, 1429.0, ms)
    beside(row, "MiB a search", 1.0, 1.0, rate, tolerance=0.5, set_by="--leak-per-search 1024")
    return PageSection(tables=[("Memory", pd.DataFrame([row]))])


def test_one_figure_of_a_row_set_by_a_stand_in_keeps_the_row_from_green(monkeypatch, tmp_path):
    monkeypatch.setitem(index_pages.SECTIONS, "memory", memory_page_section)
    reads(tmp_path, [(1, 50.0, 21.0, 27.0)])
    entry = page("memory", "reads")
    entry["workloads"][0]["folder"] = "demarkus/reads"
    manifest(tmp_path, [entry])
    html = write_index(tmp_path)[1].read_text()
    table = table_of(tmp_path, "memory")
    assert list(table["row"]) == ["set by the stand-in"]  # p50 is green, but the leak is the stand-in's setting
    assert table["tolerance"].iloc[0] == "p50: ±20 %; MiB a search: ±50 %"
    assert table["stand-in"].iloc[0] == "MiB a search: set by the stand-in: --leak-per-search 1024"
    assert "<td style='background:#cdeccf;'>1.05x</td>" in html and "<td style='background:#d6e0f5;'>1.00x</td>" in html


def zero_page_section(runs: dict[str, Path | None]) -> PageSection:
    """Figures the page gives as 0, one a page's own bound grades, and one in the page's words."""
    rows = [
        figure("errors", 0, 0, str),
        figure("zombie children", 0, 0, str, tolerance=0.0, set_by="--zombies-per-search 0"),
        figure("queued at the end", 3, 0, str, tolerance_abs=5),
        figure("phantom rows", 7, 0, str, tolerance_abs=5),
        figure("errors in 1,000 calls", 0.004, 0.0, lambda v: f"{float(v):.1f} %"),
        figure("MiB kept per 1,000 searches", 0.02, 0.9, lambda v: f"{float(v):.2f}", at_most=1.28),
        figure("MiB kept over the run", 70.0, 36.0, lambda v: f"{float(v):.0f} MiB", at_most=50.0),
        figure("submits shed", 157, None, str) | {"page": "load-sheds"},
    ]
    return PageSection(tables=[("Zeros", pd.DataFrame(rows))])


def test_a_zero_on_the_page_is_compared_as_it_is_and_words_keep_no_ratio(monkeypatch, tmp_path):
    monkeypatch.setitem(index_pages.SECTIONS, "zeros", zero_page_section)
    reads(tmp_path, [(1, 50.0, 21.0, 27.0)])
    entry = page("zeros", "reads")
    entry["workloads"][0]["folder"] = "demarkus/reads"
    manifest(tmp_path, [entry])
    markdown, html = write_index(tmp_path)
    table = table_of(tmp_path, "zeros")
    assert list(table["row"]) == [
        "green",  # 0 = 0: a match, not "no ratio"
        "set by the stand-in",  # 0 = 0, but a setting makes it so
        "amber",  # 3 against the page's 0: within the absolute tolerance of 5, still not a match
        "red",  # 7 against 0: beyond it
        "red",  # shown as 0.0 %, but not 0: the grade says so
        "green",  # 0.02 under the page's own bound of 1.28, though 0.02x the page's 0.9
        "amber",  # 70 MiB over a bound of 50: within twice it
        "no ratio",  # the page's words
    ]
    assert list(table["x"]) == ["0 = 0", "0 = 0", "3 ≠ 0", "7 ≠ 0", "0.004 ≠ 0", "≤ 1.28", "> 50", ""]
    assert list(table["tolerance"]) == [
        "exact",
        "exact",
        "±5 absolute",
        "±5 absolute",
        "exact",
        "≤ 1.28 (the page's bound)",
        "≤ 50 (the page's bound)",
        "",
    ]
    assert not any(column.endswith(("value", "abs", "at most")) for column in table.columns)
    assert "<td style='background:#cdeccf;'>0 = 0</td>" in html.read_text()
    assert (
        "**Verdict:** 🔴 2 of 8 rows green, 2 amber, 2 red, 1 set by the stand-in, 1 no ratio" in markdown.read_text()
    )


def test_a_figure_beside_others_keeps_its_own_zero_and_bound(monkeypatch, tmp_path):
    def section(runs: dict[str, Path | None]) -> PageSection:
        row: dict = {"": "after-fix"}
        beside(row, "errors", 0, 0, str)
        beside(row, "RSS kept", 0.0, 36.0, rate, at_most=50.0)
        return PageSection(tables=[("Beside", pd.DataFrame([row]))])

    monkeypatch.setitem(index_pages.SECTIONS, "beside", section)
    reads(tmp_path, [(1, 50.0, 21.0, 27.0)])
    entry = page("beside", "reads")
    entry["workloads"][0]["folder"] = "demarkus/reads"
    manifest(tmp_path, [entry])
    write_index(tmp_path)
    table = table_of(tmp_path, "beside")
    assert list(table["row"]) == ["green"]
    assert (table["errors x"].iloc[0], table["RSS kept x"].iloc[0]) == ("0 = 0", "≤ 50")
    assert table["tolerance"].iloc[0] == "errors: exact; RSS kept: ≤ 50 (the page's bound)"


def few_samples_section(runs: dict[str, Path | None]) -> PageSection:
    """Rows read over few requests and over enough: only a row that would hold is kept from its colour."""
    rows = [
        figure("within, 10 requests", 1.0, 1.0, str, samples=10),
        figure("within, 100 requests", 1.0, 1.0, str, samples=100),
        figure("set, 10 requests", 1.0, 1.0, str, set_by="--a-setting", samples=10),
        figure("3x, 10 requests", 3.0, 1.0, str, samples=10),
        figure("within, not counted", 1.0, 1.0, str),
    ]
    return PageSection(tables=[("Counted", pd.DataFrame(rows))])


def test_a_row_that_holds_over_fewer_requests_than_its_tolerance_needs_says_few_samples(monkeypatch, tmp_path):
    monkeypatch.setitem(index_pages.SECTIONS, "counted", few_samples_section)
    manifest(tmp_path, [page("counted", "w")])
    text = write_index(tmp_path)[0].read_text()
    table = table_of(tmp_path, "counted")
    assert list(table["row"]) == ["few samples", "green", "few samples", "red", "green"]
    assert table["tolerance"].iloc[0] == "±20 %, 10 requests of 25"
    assert "samples" not in table.columns  # the count is a grading column: shown beside the tolerance only
    assert "🔘 few samples" in text and "2 few samples" in text


def test_a_p50_figure_needs_a_quantiles_requests_not_a_rates():
    """A ``figure`` row's column is "measured" whatever it is: one that says it is a p50 is counted as one (53
    requests at ±20 %), never by the rate's 25, which let a 2,000-device read p50 over 13 requests hold."""
    from swarmgauge.reports.index_grades import FEW, GREEN, grade_table

    rows = [
        figure("p50, 30 requests", 1.0, 1.0, str, samples=30, statistic="p50"),
        figure("rate, 30 requests", 1.0, 1.0, str, samples=30),
        figure("p50, 60 requests", 1.0, 1.0, str, samples=60, statistic="p50"),
    ]
    graded = grade_table(pd.DataFrame(rows))
    assert graded.grades == [FEW, GREEN, GREEN]
    assert graded.table["tolerance"].iloc[0] == "±20 %, 30 requests of 53"
    assert "statistic" not in graded.table.columns


def test_a_steps_rows_are_counted_by_the_requests_of_their_step():
    from swarmgauge.reports.index_grades import grade_table, samples_needed

    steps = pd.DataFrame(
        [{"users": 1, "rps": 53.0, "p50_ms": 20.0, "p99_ms": 26.0, "requests": 60}],
    )
    graded = grade_table(step_table(steps, PAGE_POOLED, "pooled", "Step", tolerance=0.2))
    assert samples_needed("p99", 0.2) > 60 >= samples_needed("p50", 0.2)  # the p99 is what 60 requests cannot hold
    assert graded.grades == ["few samples"]
    assert graded.table["tolerance"].iloc[0] == "req/s: ±20 %; p50: ±20 %; p99: ±20 %, 60 requests of 117"
