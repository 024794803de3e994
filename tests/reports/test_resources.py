"""The memory and failure report sections, from run-directory files in the formats the listeners write."""

from __future__ import annotations

import json

from swarmgauge.reports import failures, resources

HEADER = "time,elapsed_s,step,node,source,metric,value,round\n"
MIB = 1 << 20


def write_resources(run_dir, growth_mib_per_sample: float, samples: int = 30) -> None:
    lines = [HEADER]
    for n in range(samples):
        rss = (100 + growth_mib_per_sample * n) * MIB
        lines.append(f"{1000 + n:.3f},{n:.3f},0,local,psutil:pid=7,rss_bytes,{rss!r},{n}\n")
        lines.append(f"{1000 + n:.3f},{n:.3f},0,local,cgroup:/sys/x,working_set_bytes,{rss * 0.9!r},{n}\n")
        lines.append(f"{1000 + n:.3f},{n:.3f},0,local,generator,rss_bytes,{50.0 * MIB!r},{n}\n")
        lines.append(f"{1000 + n:.3f},{n:.3f},0,local,locust,requests,{n * 100.0!r},{n}\n")
    (run_dir / "resources.csv").write_text("".join(lines))
    (run_dir / "run.json").write_text(json.dumps({"resources": {"warmup": "5 s"}}))


def test_memory_table_is_thinned_and_leaves_the_generator_out(tmp_path):
    write_resources(tmp_path, 10)
    table = resources.memory_table(resources.load_rows(tmp_path / "resources.csv"))
    assert len(table) == resources.TABLE_ROWS
    assert list(table.columns) == ["cgroup:/sys/x working_set", "psutil:pid=7 rss"]
    assert table.index[0] == "0-1 s (max)" and table.iloc[0]["psutil:pid=7 rss"] == 110.0  # each row covers its samples


def test_section_gives_the_verdict_trends_and_plot(tmp_path):
    write_resources(tmp_path, 10)
    section = resources.section(tmp_path)
    assert section.markdown.startswith("leak verdict: LEAK")
    assert "Trends after a warm-up of 5s" in section.markdown
    assert (tmp_path / "resources.png").read_bytes().startswith(b"\x89PNG")
    assert section.summary["leak_verdict"] == "leak"
    assert '<div id="chart-memory" class="plotly-graph-div"' in section.html  # report.html's chart, beside the verdict
    assert "data:image/png;base64," not in section.html  # the PNG is report.md's


def test_a_flat_target_is_no_leak(tmp_path):
    write_resources(tmp_path, 0.01)
    assert resources.section(tmp_path).summary["leak_verdict"] == "no leak"


def test_no_resources_no_section(tmp_path):
    assert resources.section(tmp_path) is None
    (tmp_path / "resources.csv").write_text(HEADER + "1.0,0.0,,local,generator,rss_bytes,1.0,0\n")
    assert resources.section(tmp_path) is None


def test_failures_by_class_with_first_seen(tmp_path):
    (tmp_path / "locust_failures.csv").write_text(
        "Method,Name,Error,Occurrences,First Seen,Last Seen\n"
        'GET,/search,"PoolExhausted(\'{""error"": ""pool""}\')",5,2026-12-02T10:00:05Z,2026-12-02T10:00:09Z\n'
        "GET,/get,\"PoolExhausted('x')\",2,2026-12-02T10:00:06Z,2026-12-02T10:00:08Z\n"
        "GET,/stats,HTTPError('500 Server Error'),1,2026-12-02T10:00:01Z,2026-12-02T10:00:01Z\n"
    )
    section = failures.section(tmp_path)
    assert "Failures by class: PoolExhausted 7, HTTPError 1." in section.markdown
    assert "PoolExhausted at 2026-12-02T10:00:05Z" in section.markdown
    assert section.summary == {"by_class": {"PoolExhausted": 7, "HTTPError": 1}}


def test_error_class_names():
    assert failures.error_class("users.mark_client.NotFound('x')") == "NotFound"
    assert failures.error_class("CatchResponseError('boom')") == "CatchResponseError"
    assert failures.error_class("HTTPError 500: oops") == "HTTPError"


def test_a_percentage_warmup_as_run_json_writes_it(tmp_path):
    write_resources(tmp_path, 10)
    (tmp_path / "run.json").write_text(json.dumps({"resources": {"warmup": "10% of the run"}}))
    section = resources.section(tmp_path)
    assert section is not None and "Trends after a warm-up of 10%" in section.markdown
