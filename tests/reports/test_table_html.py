"""Report tables as HTML: verdicts are coloured cells, and every table sits in a box that scrolls sideways."""

from __future__ import annotations

import re

import pandas as pd

from swarmgauge.reports import chart_html, table_html
from swarmgauge.reports.report import render_report


def test_slo_verdicts_are_coloured_cells_not_the_word_alone():
    slo = pd.DataFrame(
        {
            "SLO": ["fail_ratio<0.01", "p99<100ms", "rss_slope<10MiB/h"],
            "status": ["pass", "fail", "warn"],
            "colour": ["green", "red", "amber"],
        }
    )
    page = table_html.table(slo)
    cells = re.findall(r"<td( class='words')?( style='background:(#[0-9a-f]+)')?>([^<]*)</td>", page)
    coloured = {text: colour for _words, _style, colour, text in cells if colour}
    assert coloured == {
        "pass": "#cdeccf",
        "green": "#cdeccf",
        "fail": "#f4bcc0",
        "red": "#f4bcc0",
        "warn": "#fbe3a1",
        "amber": "#fbe3a1",
    }
    assert "<td class='words'>fail_ratio&lt;0.01</td>" in page  # escaped, left-aligned words


def test_a_cell_colour_given_by_position_wins_and_every_table_is_boxed():
    frame = pd.DataFrame({"request": ["GET /"], "Δ req/s": ["-50.0 %"]})
    page = table_html.table(frame, (), {(0, "Δ req/s"): "red"})
    assert page.startswith("<div class='table-box'><table>") and "<td style='background:#f4bcc0'>-50.0 %</td>" in page


def test_the_page_inlines_plotly_once_and_loads_nothing_from_the_network():
    page = chart_html.page("t", ["<p>x</p>"])
    assert page.count("<script") == 1 and not re.search(r"<script[^>]*src=", page)
    assert "overflow-x:auto" in page and "https://cdn" not in page.split("</script>")[1]


def _old_run(folder) -> None:
    """A run folder with steps.csv alone, as a run before timeline.csv and percentiles.csv left it."""
    header = "step,label,request_type,name,users,target_rate,started_at,requests,failures,rps,p50_ms,p90_ms,p99_ms,p999_ms,generator_bound"
    rows = [
        f"{i},{u} users,GET,/item,{u},,{1000 + 10 * i},{100 * u},0,{10.0 * u},5,6,{7 + i},9"
        for i, u in enumerate((1, 2, 4))
    ]
    rows += [
        f"{i},{u} users,,Aggregated,{u},,{1000 + 10 * i},{100 * u},0,{10.0 * u},5,6,{7 + i},9"
        for i, u in enumerate((1, 2, 4))
    ]
    (folder / "steps.csv").write_text(header + "\n" + "\n".join(rows) + "\n")


def test_a_run_folder_from_before_the_charts_still_renders(tmp_path):
    """A folder with steps.csv alone (no timeline.csv, percentiles.csv, resources.csv or run.json): the tables, and
    the charts there is data for (throughput, and the distribution from steps.csv's percentile columns)."""
    _old_run(tmp_path)
    summary = render_report(tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert summary["plots"] == ["throughput.png"]
    assert 'id="chart-throughput"' in page and 'id="chart-distribution-all"' in page and "chart-timeline" not in page
    assert "<th>Request</th><th>Step (users)</th>" in page and "## GET /item" in (tmp_path / "report.md").read_text()


def test_a_chart_that_fails_leaves_the_tables_and_the_other_charts(tmp_path, monkeypatch):
    from swarmgauge.reports import charts

    def broken(*_args, **_kwargs):
        raise AttributeError("a plotly that changed under us")

    monkeypatch.setattr(charts, "throughput_figure", broken)
    _old_run(tmp_path)
    render_report(tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "<th>Request</th><th>Step (users)</th>" in page and "chart-throughput" not in page
