"""The demo index over small hand-made demo folders: each page's table beside its published figures, the shape
checks on the page's shape, links to each workload's report, skipped pages and missing runs said as such."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from swarmgauge.reports.index import IndexInputError, index_sections, table_of, write_index
from swarmgauge.reports.index_figures import PageSection, figure

COLUMNS = ["step", "label", "request_type", "name", "users", "target_rate", "requests", "failures", "rps"]
COLUMNS += ["p50_ms", "p99_ms", "started_at", "duration_s"]


def write_steps(run: Path, rows: list[dict]) -> None:
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "steps.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    (run / "report.html").write_text("<html></html>")


def step(number: int, users: int, request_type: str, name: str, rps: float, p50: float, p99: float, **more) -> dict:
    return {
        "step": number,
        "label": f"{users} users",
        "request_type": request_type,
        "name": name,
        "users": users,
        "requests": int(rps * 10),
        "failures": 0,
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p99,
        "started_at": 1000.0 + 10 * number,
        "duration_s": 10.0,
        **more,
    }


def manifest(folder: Path, pages: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "demo.json").write_text(json.dumps({"started_at": 0.0, "ended_at": 600.0, "pages": pages}))


def page(name: str, *workloads: str, skipped: str | None = None) -> dict:
    return {
        "name": name,
        "title": f"the {name} page",
        "reference": f"{name}.md",
        "skipped": skipped,
        "workloads": [{"name": w, "folder": f"{name}/{w}", "elapsed_s": 12.0, "exit_code": 0} for w in workloads],
    }


def reads(folder: Path, figures: list[tuple[int, float, float, float]]) -> None:
    """A reads run folder behind a ``latest`` link, as Locust's run directory leaves it."""
    parent = folder / "demarkus" / "reads"
    run = parent / "20261203T150000Z"
    write_steps(
        run, [step(n, u, "FETCH", "/corpus/{topic}/{doc}", r, p50, p99) for n, (u, r, p50, p99) in enumerate(figures)]
    )
    os.symlink(run.name, parent / "latest")


def test_the_demarkus_reads_show_beside_the_page_and_the_ceiling_holds(tmp_path):
    reads(
        tmp_path, [(1, 50.0, 21.0, 27.0), (4, 158.0, 24.0, 40.0), (16, 160.0, 99.0, 150.0), (64, 157.0, 400.0, 470.0)]
    )
    manifest(tmp_path, [page("demarkus", "reads")])
    markdown, html = write_index(tmp_path)

    table = table_of(tmp_path, "demarkus")
    assert list(table["Workers"]) == [1, 4, 16, 64]
    assert list(table["req/s"]) == ["50", "158", "160", "157"]  # from the run folder's steps.csv
    assert list(table["page req/s"]) == ["53", "160", "159", "158"]  # the page's published figures
    assert table["req/s x"].iloc[1] == "0.99x" and table["p50"].iloc[3] == "400 ms"
    assert table["Step"].iloc[0] == "QUIC FETCH, pooled connections" and table["Step"].iloc[1] == ""
    text = markdown.read_text()
    assert "- holds: ceiling 157 to 160 req/s from 4 workers on (page: about 160)" in text
    assert "mean latency at 64 workers 400 ms, Little's law (64 / 157 req/s) says 408 ms" in text
    assert "[reads](demarkus/reads/20261203T150000Z/report.html)" in text
    assert "href='demarkus/reads/20261203T150000Z/report.html'" in html.read_text()


def test_a_rising_throughput_is_no_ceiling(tmp_path):
    reads(tmp_path, [(1, 50.0, 20.0, 25.0), (4, 190.0, 21.0, 30.0), (16, 600.0, 26.0, 40.0)])
    manifest(tmp_path, [page("demarkus", "reads")])
    text = write_index(tmp_path)[0].read_text()
    assert "- does NOT hold: ceiling 190 to 600 req/s" in text


def test_kneo_sweeps_flat_with_linear_latency_and_backpressure_without_phantom_rows(tmp_path):
    sqlite = [(1, 30.0, 30.0), (4, 31.0, 125.0), (8, 30.0, 260.0), (16, 29.0, 540.0)]
    write_steps(
        tmp_path / "kneo" / "sqlite-sync",
        [step(n, u, "run sync", "agent:echo.yaml", r, p50, p50 * 2) for n, (u, r, p50) in enumerate(sqlite)],
    )
    queue = [("run poll", 21.0, 198.0), ("run queued", 6.2, 1244.0), ("run submit", 6.2, 253.0)]
    write_steps(
        tmp_path / "kneo" / "postgres-queue",
        [step(0, 8, kind, "agent:echo.yaml", r, p50, p50 * 1.5) for kind, r, p50 in queue],
    )
    pressure = tmp_path / "kneo" / "backpressure"
    write_steps(pressure, [step(0, 16, "run queued", "agent:echo.yaml", 20.0, 300.0, 900.0)])
    ledger = {"accepted": 120, "queue_full": 37}
    (pressure / "kneo.json").write_text(json.dumps({"mismatches": 0, "ledger": ledger}))
    manifest(tmp_path, [page("kneo", "sqlite-sync", "postgres-queue", "backpressure")])
    text = write_index(tmp_path)[0].read_text()
    table = table_of(tmp_path, "kneo")
    assert list(table["Store / mode"])[:2] == ["sqlite / sync", ""]
    # closed-loop queued runs are not the page's queue row (a batch dispatched, then drained: index_kneo_rows)
    assert list(table["runs/s"]) == ["30", "31", "30", "29"]
    assert list(table["page runs/s"]) == ["51", "51", "50", "51"]
    assert "SQLite flat at 29 to 31 runs/s over 1 to 16 concurrent while p50 grew 18.0x for 16x" in text
    assert "- holds: backpressure shed 37 submits with 0 phantom rows" in text


def test_mdk_drills_in_order_and_a_read_before_ready_is_named(tmp_path):
    drills = {
        "worker-restart": {"drill": "worker-restart", "recovered": True, "ready_s": 4.0, "first_read_s": 5.5},
        "kernel-restart": {"drill": "kernel-restart", "recovered": True, "ready_s": 3.0, "first_read_s": 2.0},
    }
    for name, drill in drills.items():
        run = tmp_path / "mdk" / name
        write_steps(run, [step(0, 20, "MDK", "telemetry", 60.0, 200.0, 400.0)])
        (run / "mdk_drills.json").write_text(json.dumps({"drills": [drill | {"read_after_ready_s": 1.5}]}))
    manifest(tmp_path, [page("mdk", "worker-restart", "kernel-restart")])
    text = write_index(tmp_path)[0].read_text()
    assert "worker-restart: READY 4.00 s, first device read 5.50 s" in text
    assert "- does NOT hold: kernel-restart: READY 3.00 s, first device read 2.00 s" in text
    assert "| worker-restart | READY             | 4.00 s     | 3.4 to 8.5 s" in text
    assert "| worker-restart | first device read | 5.50 s     | 4.9 to 9.7 s" in text


def test_brain_leak_before_and_flat_after_from_the_memory_trends(tmp_path):
    for name, first, last, per in (("before-fix", 40.0, 140.0, 1000.0), ("after-fix", 24.0, 25.0, 0.5)):
        run = tmp_path / "brain" / name
        write_steps(
            run, [step(0, 1, "GET", "/search", 4.0, 250.0, 300.0), step(0, 1, "", "Aggregated", 4.0, 250.0, 300.0)]
        )
        trend = {"series": "brain rss_bytes", "first MiB": first, "last MiB": last, "delta MiB": last - first}
        trend["MiB per 1,000 requests"] = per
        (run / "summary.json").write_text(json.dumps({"Target memory": {"trends": [trend]}}))
    manifest(tmp_path, [page("brain", "before-fix", "after-fix")])
    text = write_index(tmp_path)[0].read_text()
    assert "before the fix RSS grew 100 MiB, 1,000 MiB per 1,000 searches" in text
    assert "after the fix RSS moved 1.0 MiB (< 50 MiB)" in text
    row = next(line for line in text.splitlines() if line.startswith("| before-fix: p50 of 40 searches"))
    assert [cell.strip() for cell in row.strip("|").split("|")][1:4] == ["250 ms", "1.43 s", "0.17x"]


def test_a_skipped_page_and_a_workload_without_a_run_folder_say_so(tmp_path):
    reads(tmp_path, [(1, 50.0, 21.0, 27.0), (4, 158.0, 24.0, 40.0)])
    (tmp_path / "demarkus" / "writes").mkdir(parents=True)  # the run died before writing steps.csv
    manifest(tmp_path, [page("demarkus", "reads", "writes"), page("kneo", "sqlite-sync", skipped="no PostgreSQL here")])
    markdown, html = write_index(tmp_path)
    text = markdown.read_text()
    assert "**Skipped:** no PostgreSQL here" in text and "Skipped: no PostgreSQL here" in html.read_text()
    assert "(no run folder: writes)" in text and "writes (no run)" in text
    assert table_of(tmp_path, "kneo") is None


def test_a_folder_without_a_manifest_is_a_named_error(tmp_path):
    with pytest.raises(IndexInputError, match=r"demo\.json: not a demo folder.s manifest"):
        write_index(tmp_path)
    (tmp_path / "demo.json").write_text('{"pages": 3}')
    with pytest.raises(IndexInputError, match="no list of pages"):
        write_index(tmp_path)


def counted_section(runs: dict[str, Path | None]) -> PageSection:
    """A page of three rows (one green, one red, one in words) and two rows not reproducible."""
    rows = [figure("a", 1.0, 1.0, str), figure("b", 3.0, 1.0, str), figure("c", 1.0, None, str) | {"page": "flat"}]
    return PageSection(tables=[("Rows", pd.DataFrame(rows))], not_reproducible=[("d", "why"), ("e", "why")])


@pytest.mark.parametrize(
    ("scale", "took"),
    [
        (1.0, "Took 10.0 min (600 s), within the 20 min budget of --all at --scale 1 on 2 cores."),
        (
            0.25,
            "Took 10.0 min (600 s), OVER the 6 min budget of --all at --scale 0.25 on 2 cores. --scale 0.25: steps and "
            "soaks shortened to a quarter, their floors with them (never under what a workload's mechanism needs); "
            'rows are noisier, and a row read over fewer requests than its tolerance needs says "few samples".',
        ),
        (
            0.5,
            "Took 10.0 min (600 s), within the 10.7 min budget of --all at --scale 0.5 on 2 cores. --scale 0.5: steps ",
        ),
        (2.0, "Took 10.0 min (600 s), within the 40 min budget of --all at --scale 2 on 2 cores."),
    ],
)
def test_the_header_counts_the_whole_runs_rows_and_weighs_its_time_against_the_budget(
    monkeypatch, tmp_path, scale, took
):
    from swarmgauge.reports import index_pages

    for name in ("demarkus", "kneo"):
        monkeypatch.setitem(index_pages.SECTIONS, name, counted_section)
    reads(tmp_path, [(1, 50.0, 21.0, 27.0)])
    pages = [page("demarkus", "reads"), page("kneo", "reads"), page("mdk", skipped="no mocks"), page("brain", "x")]
    pages[1]["workloads"][0]["folder"] = "demarkus/reads"
    pages[3]["skipped"] = "no stand-in"
    manifest(tmp_path, pages)
    doc = json.loads((tmp_path / "demo.json").read_text()) | {"scale": scale}
    (tmp_path / "demo.json").write_text(json.dumps(doc))
    text = write_index(tmp_path)[0].read_text()
    whole = next(line for line in text.splitlines() if line.startswith("**The whole run"))
    assert whole.startswith(
        "**The whole run (2 of 4 pages): 6 rows attempted (2 green, 0 amber, 2 red, 0 set by the stand-in, 2 no "
        "ratio) and 4 rows not reproducible here: 6 + 4 = 10 rows. The issue counted 73 rows"
    )
    assert f" {took}" in whole and whole.endswith("**")


def test_a_run_of_some_pages_has_no_budget_of_its_own(tmp_path):
    reads(tmp_path, [(1, 50.0, 21.0, 27.0)])
    manifest(tmp_path, [page("demarkus", "reads")])
    text = write_index(tmp_path)[0].read_text()
    assert "Took 10.0 min for demarkus (the budgets are for --all: 20 min at --scale 1, 6 min at --scale 0.25)." in text


def test_figures_measured_only_are_shown_after_the_pages_rows_and_not_counted(tmp_path, monkeypatch):
    import pandas as pd

    from swarmgauge.reports import index
    from swarmgauge.reports.index_figures import PageSection, figure, rate
    from swarmgauge.reports.index_render import MEASURED_ONLY

    def section(runs):
        rows = pd.DataFrame([figure("a page row", 100.0, 100.0, rate)])
        apart = pd.DataFrame([{"figure": "a figure of our own", "measured": "42"}])
        return PageSection(tables=[("The page's rows", rows)], measured_only=[("Measured here only", apart)])

    monkeypatch.setitem(index.SECTIONS, "mdk", section)
    write_steps(tmp_path / "mdk" / "w", [step(0, 1, "MDK", "telemetry", 1.0, 1.0, 1.0)])
    manifest(tmp_path, [page("mdk", "w")])
    markdown, html_path = write_index(tmp_path)[:2]
    text = markdown.read_text()
    assert "1 of 1 rows green" in text
    assert text.index("### The page's rows") < text.index("### Measured here only") < text.index("a figure of our own")
    assert MEASURED_ONLY in text
    assert "a figure of our own" in html_path.read_text()


def test_the_pages_drawn_before_the_demo_ended_give_the_index_its_end_time_once_written(tmp_path):
    """The demo draws the pages (``index_sections``) while its last reports render, before it knows its end: the
    index written from them then says the end time the manifest has by then, and the same pages as drawn at once."""
    reads(tmp_path, [(1, 50.0, 21.0, 27.0), (4, 158.0, 24.0, 40.0)])
    manifest(tmp_path, [page("demarkus", "reads")])
    doc = json.loads((tmp_path / "demo.json").read_text())
    del doc["ended_at"]
    (tmp_path / "demo.json").write_text(json.dumps(doc))
    sections = index_sections(tmp_path)
    (tmp_path / "demo.json").write_text(json.dumps(doc | {"ended_at": 600.0}))
    drawn_before = write_index(tmp_path, sections)[0].read_text()
    assert "in 10.0 min" in drawn_before and "Took 10.0 min" in drawn_before
    assert drawn_before == write_index(tmp_path)[0].read_text()


def test_a_page_whose_run_reports_still_render_is_drawn_once_they_are_done(tmp_path, monkeypatch):
    """A section reads its runs' ``summary.json``, which their reports write: the demo hands the runs still rendering,
    and their page is drawn after the wait, the others beside it (the churn section was once left out)."""
    from swarmgauge.reports import index

    reads(tmp_path, [(1, 50.0, 21.0, 27.0), (4, 158.0, 24.0, 40.0)])
    run = tmp_path / "brain" / "after-fix" / "20261203T150000Z"
    write_steps(run, [step(0, 1, "GET", "/search", 10.0, 6.0, 9.0)])
    os.symlink(run.name, run.parent / "latest")
    manifest(tmp_path, [page("demarkus", "reads"), page("brain", "after-fix")])
    order: list[str] = []
    draw = index.page_parts
    monkeypatch.setattr(index, "page_parts", lambda folder, p: order.append(p["name"]) or draw(folder, p))
    drawn = index.pages_ready(tmp_path, [run.parent / "latest"])
    order.append("reports done")
    sections = index_sections(tmp_path, drawn)
    assert order == ["demarkus", "reports done", "brain"]
    assert [section["title"].split(":")[0] for section in sections] == ["demarkus", "brain"]


def test_the_intro_says_the_hosts_speed_against_the_reference_and_nothing_when_unmeasured():
    from swarmgauge.core.host_speed import REFERENCE_MS
    from swarmgauge.reports.index import speed_text

    slow = speed_text({"start": REFERENCE_MS, "end": REFERENCE_MS * 1.4})
    took = f"took {REFERENCE_MS:g} ms of CPU before the first workload and {REFERENCE_MS * 1.4:g} ms of CPU after"
    assert took in slow
    assert "(1.40x the reference's CPU at worst)" in slow
    assert "(as fast, within 5%)" in speed_text({"start": REFERENCE_MS * 1.03})
    assert "(0.80x the reference's CPU: faster than it)" in speed_text({"start": REFERENCE_MS * 0.8})
    assert speed_text(None) == "" and speed_text({}) == "" and speed_text({"start": "fast"}) == ""
