"""The kneo page's rows beyond the sync sweeps over hand-made run folders: the batch queue row from the store's
drain figures, the store comparison with each side's CPU, the provider delay, the scaled soak, the rows not tried."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_figures import PageSection
from swarmgauge.reports.index_grades import GREEN, RED, GradedTable, grade_table
from swarmgauge.reports.index_kneo_rows import add_kneo_rows, cpu_by_side, side_of
from swarmgauge.reports.index_kneo_soak import threads_check

KNEO_PID = "psutil:pidfile=/tmp/swarmgauge-kneo-x/kneo-serv-{}.pid"
PG = "psutil:match=-D /tmp/swarmgauge\\-pg\\-x/data( |$)"
STEP_COLUMNS = ["step", "request_type", "name", "users", "requests", "failures", "rps", "p50_ms", "p99_ms"]
STEP_COLUMNS += ["duration_s"]


def steps(run: Path, rows: list[dict]) -> None:
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "steps.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=STEP_COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)


def resources(run: Path, samples: list[tuple[int, int, str, str, float]]) -> None:
    """(round, step, source, metric, value) rows of a resources.csv."""
    frame = pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value"])
    frame.to_csv(run / "resources.csv", index=False)


def sync(users: int, step: int, rps: float, p50: float) -> dict:
    return {
        "step": step,
        "request_type": "run sync",
        "name": "agent:echo.yaml",
        "users": users,
        "requests": 100,
        "failures": 0,
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p50 * 2,
        "duration_s": 5,
    }


def table(section: PageSection, caption: str) -> pd.DataFrame:
    return next(frame for title, frame in section.tables if title.startswith(caption))


def test_the_side_of_each_sampled_process():
    assert side_of("generator") == "generator" and side_of(KNEO_PID.format(1)) == "kneo-serv"
    assert side_of(PG) == "PostgreSQL" and side_of("locust") is None
    assert side_of("prom:http://127.0.0.1:1/metrics#kneo_runs_queued") is None


def test_a_steps_first_cpu_sample_measured_the_step_before_and_is_left_out(tmp_path):
    resources(
        tmp_path,
        [
            (0, 0, "generator", "cpu_percent", 5.0),
            (1, 0, "generator", "cpu_percent", 7.0),
            (2, 1, "generator", "cpu_percent", 90.0),
            (3, 1, "generator", "cpu_percent", 40.0),
            (3, 1, KNEO_PID.format(0), "cpu_percent", 30.0),
            (4, 1, KNEO_PID.format(0), "cpu_percent", 50.0),
            (4, 1, KNEO_PID.format(1), "cpu_percent", 20.0),
            (3, 1, KNEO_PID.format(1), "cpu_percent", 10.0),
        ],
    )
    cpu = cpu_by_side(pd.read_csv(tmp_path / "resources.csv"))
    assert cpu[0] == {"generator": 7.0} and cpu[1]["generator"] == 40.0  # 90 % was step 0's interval
    assert cpu[1]["kneo-serv"] == 70.0  # both processes summed in the round both are inside step 1


def test_the_queue_row_is_the_batch_drained_and_the_store_rows_carry_each_sides_cpu(tmp_path):
    queue = tmp_path / "postgres-queue"
    steps(
        queue,
        [
            {
                "step": 0,
                "request_type": "run submit",
                "name": "agent:echo.yaml",
                "users": 8,
                "requests": 500,
                "failures": 0,
                "rps": 30,
                "p50_ms": 200,
                "p99_ms": 400,
                "duration_s": 20,
            }
        ],
    )
    drain = {
        "runs": 500,
        "unfinished": 0,
        "drain_s": 40.0,
        "runs_per_s": 12.5,
        "wait_p50_ms": 21000.0,
        "wait_p95_ms": 38000.0,
        "wait_p99_ms": 39500.0,
        "batch": 500,
        "dispatched": 500,
    }
    (queue / "kneo.json").write_text(json.dumps({"mismatches": 0, "queue_drain": drain}))
    for name, rates in (
        ("sqlite-sync", (25.0, 43.0)),
        ("postgres-sync", (25.0, 20.0)),
        ("postgres-x2-sync", (32.0, 60.0)),
        ("sqlite-x2-sync", (None, 43.0)),
    ):
        at_1 = [] if rates[0] is None else [sync(1, 0, rates[0], 30.0)]
        steps(tmp_path / name, [*at_1, sync(8, 1, rates[1], 200.0)])
        sources = ("generator", KNEO_PID.format(0), PG)
        samples = [(r, r // 3, src, "cpu_percent", 50.0) for r in (0, 1, 2, 3, 4, 5) for src in sources]
        resources(tmp_path / name, samples)
    names = ("postgres-queue", "sqlite-sync", "postgres-sync", "postgres-x2-sync", "sqlite-x2-sync")
    runs = {name: tmp_path / name for name in names}
    section = PageSection()
    add_kneo_rows(section, runs, cores=4)
    queue_table = table(section, "postgres / queue")
    assert list(queue_table["measured"][:3]) == ["500", "12", "21.00 s"]  # dispatched, drain rate, p50 wait
    assert list(queue_table["page"][:3]) == ["500", "44", "5.04 s"]
    store = table(section, "PostgreSQL against SQLite")
    row = store[store["figure"] == "PostgreSQL, 2 service processes at 8"].iloc[0]
    assert row["measured"] == "60" and row["page"] == "77"
    assert row["CPU (% of a core)"] == "generator 50 %, kneo-serv 50 %, PostgreSQL 50 %"
    texts = [check.text for check in section.checks]
    assert any("queue wait dominates: 500 of 500 runs dispatched, p50 wait 21.00 s" in t for t in texts)
    assert any(t.startswith("at 8 concurrent PostgreSQL 60 runs/s against SQLite 43: 1.40x") for t in texts)
    assert [c.holds for c in section.checks if "at 8 concurrent" in c.text] == [True]
    graded = grade_table(store)
    ratios = dict(zip(graded.table["figure"], graded.grades))
    # each store on as many processes as the other: two at 8 (60 / 43 = 1.40 against 1.54), one at 1, where SQLite
    # over two processes was not run (25 / 25 against 1.55)
    assert ratios["PostgreSQL ÷ SQLite runs/s at 8 (2 service processes)"] == GREEN
    assert ratios["PostgreSQL ÷ SQLite runs/s at 1 (1 service process)"] == RED
    assert ratios["SQLite at 1"] == "no ratio"  # the absolute is the machine's: shown beside the page's, not graded
    assert row["kneo-serv CPU a run"] == "8.33 ms"  # 50 % of a core over 60 runs/s
    assert any(note.startswith("PostgreSQL ÷ SQLite at 1 does not hold here") for note in section.notes)
    assert any("reliability lanes" in row for row, _ in section.not_reproducible)


def store_runs(tmp_path: Path, cpu: dict[str, float], sqlite_x2: float = 42.0) -> dict[str, Path | None]:
    """The store workloads named in ``cpu`` at 1 and 8 concurrent (SQLite over two processes at 8 only, as the demo
    runs it, at ``sqlite_x2`` runs/s), kneo-serv's CPU (all its processes) per workload."""
    for name, rates in (
        ("sqlite-sync", (39.0, 42.0)),
        ("postgres-sync", (39.0, 32.0)),
        ("postgres-x2-sync", (37.0, 73.0)),
        ("sqlite-x2-sync", (None, sqlite_x2)),
    ):
        if name not in cpu:
            continue
        at_1 = [] if rates[0] is None else [sync(1, 0, rates[0], 25.0)]
        steps(tmp_path / name, [*at_1, sync(8, 1, rates[1], 190.0)])
        samples = [(r, r // 3, KNEO_PID.format(0), "cpu_percent", cpu[name]) for r in range(6)]
        samples += [(r, r // 3, src, "cpu_percent", 10.0) for r in range(6) for src in ("generator", PG)]
        resources(tmp_path / name, samples)
    return {name: tmp_path / name for name in cpu}


def test_the_provider_delay_and_the_soak_rows(tmp_path):
    delay = tmp_path / "provider-delay"
    steps(delay, [sync(8, 0, 14.6, 520.0)])
    soak = tmp_path / "soak"
    submit = {"step": 0, "request_type": "run submit", "name": "agent:echo.yaml", "users": 16, "requests": 600}
    steps(soak, [{**submit, "failures": 0, "rps": 20.0, "p50_ms": 30, "p99_ms": 90, "duration_s": 30}])
    (soak / "plan.yaml").write_text("kind: soak\nrate: 20\nduration: 33s\nwarmup: 3s\n")
    # 80 MiB before the first run, 82 once warm, then +0.1 MiB a round
    rss = [(r, 0, KNEO_PID.format(0), "rss_bytes", (80.0 if r == 0 else 82 + r * 0.01) * 2**20) for r in range(34)]
    samples = [(*row, float(row[0])) for row in rss]
    samples += [(r, 0, KNEO_PID.format(0), "threads", 30.0 if r < 17 else 29.0, float(r)) for r in range(34)]
    gauge = "prom:http://x/metrics#kneo_runs_queued"
    samples += [(r, 0, gauge, "kneo_runs_queued", 24.0 if r == 9 else 2.0, float(r)) for r in range(34)]
    frame = pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value", "elapsed_s"])
    frame.to_csv(soak / "resources.csv", index=False)
    drain = {"runs": 600, "unfinished": 0, "runs_per_s": 20.0, "batch": 2000, "dispatched": 600}
    (soak / "kneo.json").write_text(json.dumps({"mismatches": 0, "queue_drain": drain}))
    section = PageSection()
    add_kneo_rows(section, {"provider-delay": delay, "soak": soak})
    delayed = table(section, "0.5 s simulated provider delay")
    assert list(delayed["measured"]) == ["15", "520 ms", "20 ms"] and list(delayed["page"]) == ["15", "513 ms", "13 ms"]
    soaked = table(section, "Sustained-load soak")
    by_figure = dict(zip(soaked["figure"], soaked["measured"]))
    assert by_figure["peak queued (kneo_runs_queued)"] == "24" and by_figure["runs left queued after the drain"] == "0"
    # the backlog in seconds of arrivals is graded, not the count (which the arrival rate sets)
    assert by_figure["peak backlog in seconds of arrivals (the gauge's peak queued ÷ runs/s)"] == "1.20 s"
    assert by_figure["RSS first (before the first run) to last"] == "80.0 to 82.3 MiB"
    warm = next(f for f in by_figure if f.startswith("RSS after the 3 s warm-up"))
    assert warm.startswith("RSS after the 3 s warm-up to last (82.0 to 82.3 MiB)")  # the 80 MiB sample is before it
    assert by_figure["threads, highest"] == "30"
    runs_row = soaked[soaked["figure"] == "runs/s over the soak (drained)"].iloc[0]
    assert runs_row["set by"] == "soak rate 20/s"
    assert all(check.holds for check in section.checks), [c.text for c in section.checks]


def test_a_soak_whose_rss_keeps_growing_is_not_green_and_its_check_fails(tmp_path):
    soak = tmp_path / "soak"
    submit = {"step": 0, "request_type": "run submit", "name": "agent:echo.yaml", "users": 16, "requests": 600}
    steps(soak, [{**submit, "failures": 0, "rps": 20.0, "p50_ms": 30, "p99_ms": 90, "duration_s": 30}])
    (soak / "plan.yaml").write_text("kind: soak\nrate: 20\nduration: 33s\nwarmup: 3s\n")
    rss = [(r, 0, KNEO_PID.format(0), "rss_bytes", (82 + r * 0.3) * 2**20, float(r)) for r in range(34)]  # +12 %
    frame = pd.DataFrame(rss, columns=["round", "step", "source", "metric", "value", "elapsed_s"])
    frame.to_csv(soak / "resources.csv", index=False)
    section = PageSection()
    add_kneo_rows(section, {"soak": soak})
    graded = grade_table(table(section, "Sustained-load soak"))
    shown = dict(zip(graded.table["figure"], graded.grades))
    half = next(f for f in shown if f.startswith("RSS over the soak's second half"))
    assert shown[half] == RED  # +6 % in half a minute: a leak's straight line, not the page's +0.8 % an hour
    assert not next(c for c in section.checks if c.text.startswith("soak RSS")).holds


def test_the_worker_drain_ratio_beside_the_pages_roughly_n_times(tmp_path):
    runs = {}
    for workers, per_s in ((1, 4.4), (4, 15.0)):
        run = tmp_path / f"drain-{workers}"
        run.mkdir()
        drain = {"runs": 32, "batch": 32, "dispatched": 32, "unfinished": 0, "runs_per_s": per_s}
        (run / "kneo.json").write_text(json.dumps({"mismatches": 0, "queue_drain": drain}))
        runs[f"drain-{workers}"] = run
    section = PageSection()
    add_kneo_rows(section, runs)
    drained = grade_table(table(section, "N worker threads"))
    assert list(drained.table["measured"]) == ["4.4", "15", "3.41x"]
    assert drained.grades[-1] == GREEN  # 3.41 of the page's 4: "roughly" within ±25 %
    assert not any("N worker threads" in row for row, _ in section.not_reproducible)


def test_threads_bounded_is_a_ceiling_the_count_falls_back_under_not_an_exact_count():
    # a loaded run's soak: more runs in flight in its second half lift every sample, then the count falls back
    threads = pd.Series([19, 24, 28, 29, 28, 33, 37, 42, 45, 41, 35, 33, 28, 27, 28])
    running = pd.Series([0, 1, 1, 2, 1, 3, 7, 8, 12, 10, 4, 2, 0, 0, 1])
    warm = pd.Series([r >= 3 for r in range(15)])
    check = threads_check(threads, running, warm)
    assert check.holds and "highest 45" in check.text and "30 after the warm-up and 27 at the end" in check.text
    leaking = threads + pd.Series([r // 2 for r in range(15)])  # a thread kept every other second: the floor climbs
    assert not threads_check(leaking, running, warm).holds


def backlog_soak(tmp_path: Path, *, running: bool, **drain: int) -> GradedTable:
    """The soak table, graded, of 1,368 runs submitted at 24/s whose queued gauge read 15 at one of 62 one-second
    samples (1 at the others) with a 1 s idle poll; ``running`` adds the running gauge (0 at that sample), ``drain``
    the store's own figures beside the drain's runs, rate and batch."""
    soak = tmp_path / "soak"
    submit = {"step": 0, "request_type": "run submit", "name": "agent:echo.yaml", "users": 16, "requests": 1368}
    steps(soak, [{**submit, "failures": 0, "rps": 24.0, "p50_ms": 30, "p99_ms": 90, "duration_s": 57}])
    gauge = "prom:http://x/metrics#kneo_runs_queued"
    samples = [(r, 0, gauge, "kneo_runs_queued", 15.0 if r == 17 else 1.0, float(r)) for r in range(62)]
    if running:
        samples += [(r, 0, gauge, "kneo_runs_running", 0.0 if r == 17 else 2.0, float(r)) for r in range(62)]
    frame = pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value", "elapsed_s"])
    frame.to_csv(soak / "resources.csv", index=False)
    queue_drain = {"runs": 1368, "unfinished": 0, "runs_per_s": 24.0, "batch": 4000, **drain}
    (soak / "kneo.json").write_text(json.dumps({"mismatches": 0, "queue_drain": queue_drain}))
    (soak / "run.json").write_text(json.dumps({"options": {"kneo_embedded_idle_poll": 1.0, "sample_interval": 1.0}}))
    section = PageSection()
    add_kneo_rows(section, {"soak": soak})
    return grade_table(table(section, "Sustained-load soak"))


def test_a_soak_backlog_off_the_pages_says_what_it_was_made_of(tmp_path):
    soaked = backlog_soak(tmp_path, running=True, dispatched=1368)
    row = soaked.table.set_index("figure").loc["peak backlog in seconds of arrivals (the gauge's peak queued ÷ runs/s)"]
    assert row["measured"] == "0.62 s" and row["row"].endswith("amber")  # 0.46 of the page's 1.34 s stays amber
    assert row["why it does not hold"].startswith(
        "15 runs queued at the peak sample with 0 running (every worker asleep in its idle poll), one of 62 samples "
        "read every 1 s"
    )
    assert "one 1 s idle poll of arrivals is 24 runs here, 44 on the page" in row["why it does not hold"]


def test_the_soak_backlog_is_the_stores_peak_when_the_store_kept_start_stamps(tmp_path):
    soaked = backlog_soak(tmp_path, running=False, peak_queued=23)
    shown = soaked.table.set_index("figure")
    assert shown.loc["peak queued (kneo_runs_queued, read every 1 s)", "measured"] == "15"  # the sampler's
    assert shown.loc["peak queued (from the store: saved, not yet started, at every instant)", "measured"] == "23"
    row = shown.loc["peak backlog in seconds of arrivals (the store's peak queued ÷ runs/s)"]
    assert row["measured"] == "0.96 s" and row["row"].endswith("green")  # 0.72 of the page's 1.34 s


def test_a_store_ratio_measured_while_others_filled_the_machine_is_machine_bound(tmp_path):
    # kneo-serv far below a core looks store-bound, but at load 8 on 2 cores it was waiting for a core
    demo = tmp_path / "demo"
    runs = store_runs(demo / "kneo", {"sqlite-sync": 13.0, "postgres-sync": 24.0, "postgres-x2-sync": 38.0})
    for name, run in list(runs.items()):
        folder = run / "20261205T113920Z"
        folder.mkdir()
        for item in run.iterdir():
            if item.is_file():
                item.rename(folder / item.name)
        runs[name] = folder
    loads = {"sqlite-sync": 8.2, "postgres-sync": 8.7, "postgres-x2-sync": 5.9}
    workloads = [{"name": n, "run_folder": f"kneo/{n}/20261205T113920Z", "load_avg": v} for n, v in loads.items()]
    (demo / "demo.json").write_text(json.dumps({"pages": [{"name": "kneo", "workloads": workloads}]}))
    section = PageSection()
    add_kneo_rows(section, runs, cores=2)
    shown = table(section, "PostgreSQL against SQLite").set_index("figure")
    row = shown.loc["PostgreSQL ÷ SQLite runs/s at 1 (1 service process)"]
    assert row["x"] == "machine-bound"
    assert row["bound by"].startswith("machine-bound: SQLite: others filled the machine (load average 8.2 on 2 cores)")
    assert not any(note.startswith("PostgreSQL ÷ SQLite at 1 does not hold here") for note in section.notes)


def test_a_batch_shortened_by_the_scale_is_read_against_the_pages_waits_shortened_alike_and_says_so(tmp_path):
    """Half the page's batch drained at the same rate waits half as long: the row names both batch sizes, and its
    p50/p95/p99 sit beside the page's times the batch's share, so the ratio is the one a whole batch would show."""
    queue = tmp_path / "postgres-queue"
    queue.mkdir()
    drain = {"runs": 250, "unfinished": 0, "runs_per_s": 12.5, "batch": 250, "dispatched": 250}
    drain |= {"wait_p50_ms": 10500.0, "wait_p95_ms": 19000.0, "wait_p99_ms": 19750.0}
    (queue / "kneo.json").write_text(json.dumps({"mismatches": 0, "queue_drain": drain}))
    section = PageSection()
    add_kneo_rows(section, {"postgres-queue": queue}, cores=4)
    rows = table(section, "postgres / queue").set_index("figure")
    dispatched = "runs dispatched (the page's --total-runs 500, 250 at this run's --scale)"
    assert rows.loc[dispatched, "measured"] == "250" and rows.loc[dispatched, "page"] == "250"
    p50 = rows.loc["p50 (queue wait) (page × 250/500, the batch's share)"]
    assert (p50["measured"], p50["page"], p50["x"]) == ("10.50 s", "2.52 s", "4.17x")
    assert rows.loc["p99 (page × 250/500, the batch's share)", "page"] == "3.12 s"
    assert any("queue wait dominates: 250 of 250 runs dispatched" in check.text for check in section.checks)
