"""The report's chart builders: data in, traces out (what each chart draws, and what its hover says)."""

from __future__ import annotations

import math

import pandas as pd

from swarmgauge.reports import charts, distribution_chart, memory_chart

PAGE = [
    {"name": "FETCH", "users": 1, "rps": 53, "p50_ms": 20, "p99_ms": 26, "page": "demarkus-kind-bench.md#reads"},
    {"name": "FETCH", "users": 4, "rps": 160, "p50_ms": 21, "p99_ms": 45, "page": "demarkus-kind-bench.md#reads"},
    {"name": "FETCH", "users": 16, "rps": 159, "p50_ms": 100, "p99_ms": 166, "page": "demarkus-kind-bench.md#reads"},
]


def steps_frame(rows: list[tuple[int, float, float, float]], name: str = "/corpus/{topic}/{doc}") -> pd.DataFrame:
    """steps.csv rows for the request FETCH ``name``: (users, req/s, p50, p99) per step, plus Aggregated rows."""
    named = [
        {
            "step": i,
            "label": f"{u} users",
            "request_type": "FETCH",
            "name": name,
            "users": u,
            "target_rate": None,
            "started_at": 1000.0 + 10 * i,
            "rps": rps,
            "p50_ms": p50,
            "p90_ms": (p50 + p99) / 2,
            "p99_ms": p99,
            "p999_ms": p99 * 1.5,
        }
        for i, (u, rps, p50, p99) in enumerate(rows)
    ]
    return pd.DataFrame(named + [dict(r, name="Aggregated", request_type="") for r in named])


RAMP = steps_frame(
    [(1, 45.0, 22.655, 44.415), (4, 155.255, 25.6, 37.7), (16, 159.524, 100.3, 116.0), (64, 159.5, 401, 420)]
)


def _traces(figure, prefix: str = "") -> dict:
    return {t.name: t for t in figure.data if str(t.name).startswith(prefix)}


def test_the_throughput_chart_draws_each_step_with_its_figure_as_the_table_writes_it():
    figure = charts.throughput_figure(RAMP)
    measured = _traces(figure)["FETCH /corpus/{topic}/{doc} req/s"]
    assert list(measured.x) == [1, 4, 16, 64] and list(measured.y) == [45.0, 155.255, 159.524, 159.5]
    assert measured.hovertext[0].endswith("1 users: 45.0 req/s") and measured.hovertext[1].endswith(": 155 req/s")
    p99 = _traces(figure)["FETCH /corpus/{topic}/{doc} p99"]
    assert p99.xaxis == "x2" and p99.hovertext[0].endswith("p99 44.4 ms")
    assert figure.layout.xaxis.type == "log" and list(figure.layout.xaxis.ticktext) == ["1", "4", "16", "64"]


def test_the_knee_is_a_star_at_the_step_the_trend_sentence_names():
    figure = charts.throughput_figure(RAMP)
    [knee] = [t for t in figure.data if str(t.name).endswith(": knee")]
    assert list(knee.x) == [4] and list(knee.y) == [155.255] and knee.marker.symbol == "star"
    rising = steps_frame([(1, 10.0, 1, 2), (2, 20.0, 1, 2), (4, 40.0, 1, 2)])
    assert not [t for t in charts.throughput_figure(rising).data if str(t.name).endswith(": knee")]


def test_the_pages_figures_are_drawn_beside_the_measured_for_its_request_type():
    figure = charts.throughput_figure(RAMP, PAGE)
    page = _traces(figure, "page: ")
    assert set(page) == {f"page: FETCH /corpus/{{topic}}/{{doc}} {f}" for f in ("req/s", "p50", "p99")}
    rate = page["page: FETCH /corpus/{topic}/{doc} req/s"]
    assert list(rate.x) == [1.0, 4.0, 16.0] and list(rate.y) == [53, 160, 159] and rate.line.dash == "dot"
    assert "demarkus-kind-bench.md#reads" in rate.hovertext[0]
    other = [dict(PAGE[0], name="LOOKUP")]
    assert not _traces(charts.throughput_figure(RAMP, other), "page: ")


def test_compare_draws_both_runs_on_one_chart_base_dashed():
    new = steps_frame([(1, 50.0, 20, 30), (4, 170.0, 22, 35)])
    figure = charts.throughput_figure(RAMP, runs=[("BASE", RAMP), ("NEW", new)])
    rates = {name: t for name, t in _traces(figure).items() if name.endswith("req/s")}
    assert rates["BASE: FETCH /corpus/{topic}/{doc} req/s"].line.dash == "dash"
    assert rates["NEW: FETCH /corpus/{topic}/{doc} req/s"].line.dash == "solid"
    assert list(rates["NEW: FETCH /corpus/{topic}/{doc} req/s"].y) == [50.0, 170.0]


def test_one_step_or_an_open_model_run_has_no_throughput_chart():
    assert charts.throughput_figure(RAMP[RAMP["step"] == 0]) is None
    assert charts.throughput_figure(RAMP.assign(target_rate=5.0)) is None


def test_latency_over_time_shades_each_step_and_breaks_the_line_over_a_warmup():
    timeline = pd.DataFrame(
        {
            "time": [1002.0, 1003.0, 1004.0, 1013.0, 1014.0],
            "step": [0, 0, 0, 1, 1],
            "requests": [40, 41, 42, 150, 151],
            "p50_ms": [22.0, 23.0, 22.5, 25.0, 26.0],
            "p99_ms": [40.0, 41.0, 44.0, 37.0, 38.0],
        }
    )
    figure = charts.timeline_figure(timeline, RAMP.iloc[:2])
    bands = [s for s in figure.layout.shapes if s.type == "rect"]
    assert [(b.x0, b.x1) for b in bands] == [(0.0, 10.0), (10.0, 15.0)]
    assert [a.text for a in figure.layout.annotations] == ["1 users", "4 users"]
    p50 = _traces(figure)["p50"]
    assert list(p50.x) == [2.0, 3.0, 4.0, None, 13.0, 14.0]  # no line across the seconds not measured
    assert p50.hovertext[0] == "2 s: p50 22.0 ms"
    assert list(_traces(figure)["requests per interval"].y) == [40, 41, 42, 150, 151]


def test_the_distribution_reads_percentiles_csv_and_falls_back_to_steps_csv():
    percentiles = pd.DataFrame(
        [
            {"step": s, "request_type": "FETCH", "name": "/corpus/{topic}/{doc}", "percentile": q, "ms": ms}
            for s in (0, 1)
            for q, ms in ((50.0, 20.0 + s), (99.0, 40.0 + s), (99.9, 60.0 + s), (100.0, 90.0))
        ]
    )
    [(_title, figure)] = distribution_chart.distribution_figures(
        distribution_chart.percentile_points(percentiles, RAMP)
    )
    assert [t.name for t in figure.data] == ["1 users", "4 users"]
    first = figure.data[0]
    assert list(first.y) == [20.0, 40.0, 60.0]  # the maximum (100 %) is no point on a nines axis
    assert [round(x, 3) for x in first.x] == [round(math.log10(2), 3), 2.0, 3.0]
    assert first.hovertext[1] == "1 users: p99 40.0 ms"
    old = distribution_chart.percentile_points(None, RAMP)
    assert sorted(old["percentile"].unique()) == [50.0, 90.0, 99.0, 99.9]
    assert len(old) == 4 * 4


def test_many_request_names_get_one_distribution_chart_each():
    several = pd.concat([steps_frame([(1, 1, 1, 2), (2, 2, 1, 2), (4, 4, 1, 2)], name=f"/n{i}") for i in range(3)])
    figures = distribution_chart.distribution_figures(distribution_chart.percentile_points(None, several))
    assert [title for title, _f in figures] == ["FETCH /n0", "FETCH /n1", "FETCH /n2"]


def _resources(with_sessions: bool) -> pd.DataFrame:
    rows = []
    for round_ in range(4):
        for source, rss in (("generator", 60.0), ("psutil:pid=1", 70.0 + round_), ("psutil:pid=2", 10.0)):
            rows.append((round_, float(round_), source, "rss_bytes", rss * memory_chart.MIB))
        if with_sessions:
            rows.append((round_, float(round_), "prom:x", "mcp_gateway_sessions_live", 5.0 * round_))
    return pd.DataFrame(rows, columns=["round", "elapsed_s", "source", "metric", "value"])


def test_memory_against_time_sums_the_target_and_against_live_sessions():
    figure = memory_chart.memory_figure(_resources(True))
    target = _traces(figure)["target RSS"]
    assert list(target.y) == [80.0, 81.0, 82.0, 83.0] and list(_traces(figure)["generator RSS"].y) == [60.0] * 4
    against = _traces(figure)["target RSS at a sample"]
    assert list(against.x) == [0.0, 5.0, 10.0, 15.0] and list(against.y) == [80.0, 81.0, 82.0, 83.0]
    assert against.hovertext[1] == "5 live sessions: 81.0 MiB"
    alone = memory_chart.memory_figure(_resources(False))
    assert "target RSS at a sample" not in _traces(alone) and "xaxis2" not in alone.layout.to_plotly_json()
