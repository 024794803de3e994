"""The kneo rows read over a drain or one step say why they stray, from kneo-serv's CPU over that window: the queue
batch, the worker drain ratio, the soak's rate and the provider delay's overhead, each over hand-made run folders
(``resources.csv`` samples a second, ``kneo.json``'s drain). Where kneo-serv near a core (or the machine) explains the
figure the row is machine-bound; where it does not, the row keeps its colour and says what was measured."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_figures import PageSection
from swarmgauge.reports.index_grades import AMBER, GREEN, MACHINE, grade_table
from swarmgauge.reports.index_kneo_bounds import window_cpu
from swarmgauge.reports.index_kneo_rows import add_kneo_rows
from tests.reports.test_index_kneo_rows import KNEO_PID, PG, steps, sync, table

WHY = "why it does not hold"
START = 1_800_000_000.0


def sampled(run: Path, seconds: int, cpu: dict[str, float]) -> None:
    """A resources.csv of one CPU sample a second per source (``cpu``: source -> % of a core), each covering the
    second before it, from the run's start (round 0 holds no CPU, as the sampler's first round)."""
    run.mkdir(parents=True, exist_ok=True)
    rows = [(START, 0.0, 0, 0, "generator", "rss_bytes", 1.0)]
    for second in range(1, seconds + 1):
        rows += [(START + second, float(second), second, 0, src, "cpu_percent", v) for src, v in cpu.items()]
    frame = pd.DataFrame(rows, columns=["time", "elapsed_s", "round", "step", "source", "metric", "value"])
    frame.to_csv(run / "resources.csv", index=False)


def batch(run: Path, drain: dict, options: dict | None = None) -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / "kneo.json").write_text(json.dumps({"mismatches": 0, "queue_drain": {"unfinished": 0, **drain}}))
    (run / "run.json").write_text(json.dumps({"options": options or {}}))


def graded(section: PageSection, caption: str) -> tuple[pd.DataFrame, dict[str, str]]:
    result = grade_table(table(section, caption))
    return result.table.set_index("figure"), dict(zip(result.table["figure"], result.grades))


def test_kneo_servs_cpu_over_a_window_weights_each_sample_by_its_seconds_inside_it():
    rows = [(float(s), s, KNEO_PID.format(0), "cpu_percent", v) for s, v in ((1, 80.0), (2, 40.0), (3, 20.0))]
    frame = pd.DataFrame(rows, columns=["elapsed_s", "round", "source", "metric", "value"])
    cpu = window_cpu(frame, 1.5)
    assert cpu is not None and cpu.share == (80.0 + 40.0 * 0.5) / 1.5 and cpu.sampled == 1.5
    later = window_cpu(frame, 1.0, start=1.5)  # half of the 40 % second, half of the 20 % one
    assert later is not None and later.share == 30.0
    # a drain that went on after the sampler stopped: the rest at the last sample's share, and said so
    longer = window_cpu(frame, 5.0)
    assert longer is not None and longer.share == (80 + 40 + 20 + 20 * 2) / 5.0
    assert "sampled over its first 3.0 s" in longer.over("drain")


def queue_section(tmp_path: Path, service: float, p50_ms: float = 8200.0) -> PageSection:
    """500 runs drained in 25 s (20 runs/s) with kneo-serv's one process at ``service`` % of a core over it."""
    run = tmp_path / "postgres-queue"
    drain = {"runs": 500, "batch": 500, "dispatched": 500, "drain_s": 25.0, "runs_per_s": 20.0}
    batch(run, drain | {"wait_p50_ms": p50_ms, "wait_p95_ms": 9100.0, "wait_p99_ms": 9200.0})
    sampled(run, 25, {KNEO_PID.format(0): service, "generator": 5.0, PG: 11.0})
    section = PageSection()
    add_kneo_rows(section, {"postgres-queue": run}, cores=2)
    return section


def test_a_queue_drain_kneo_serv_held_near_a_core_is_machine_bound_and_so_are_the_waits_it_explains(tmp_path):
    rows, grades = graded(queue_section(tmp_path, 84.0), "postgres / queue")
    throughput = "throughput (runs/s, the one worker's drain)"
    assert grades[throughput] == MACHINE and rows.loc[throughput, "x"] == MACHINE
    assert rows.loc[throughput, WHY].startswith(
        "machine-bound: kneo-serv's one process at 84 % of a core, near a full core, over the 25.0 s drain; 42 ms of "
        "its CPU a run"
    )
    assert "a full core drains at most 24 runs/s" in rows.loc[throughput, WHY]
    # 8.2 s is 0.33 of this 25 s drain, the page's 5.04 s 0.44 of its 500 runs at 44/s: the drain explains it
    assert grades["p50 (queue wait)"] == MACHINE
    assert (
        "p50 is 0.33 of this 25.0 s drain, 0.44 of the page's 11.4 s (0.74x, within ±50 %)"
        in rows.loc["p50 (queue wait)", WHY]
    )
    assert grades["p99"] == GREEN and rows.loc["p99", WHY] == ""  # a figure that holds needs no why
    assert list(table(queue_section(tmp_path, 84.0), "postgres / queue").columns)[-1] == WHY


def test_a_queue_drain_kneo_serv_did_not_bound_stays_amber_with_what_was_measured(tmp_path):
    rows, grades = graded(queue_section(tmp_path, 40.0), "postgres / queue")
    throughput = "throughput (runs/s, the one worker's drain)"
    assert grades[throughput] == AMBER and rows.loc[throughput, "x"] == "0.45x"
    assert rows.loc[throughput, WHY].startswith(
        "kneo-serv's one process at 40 % of a core over the 25.0 s drain; 20 ms"
    )
    assert grades["p50 (queue wait)"] == AMBER
    assert rows.loc["p50 (queue wait)", WHY].startswith("the wait follows the drain: p50 is 0.33")


def test_a_queue_wait_the_drain_does_not_explain_stays_amber_though_the_drain_is_machine_bound(tmp_path):
    # 2 s a run of 25 s is 0.08 of the drain against the page's 0.44: shorter waits than any drain explains
    rows, grades = graded(queue_section(tmp_path, 84.0, p50_ms=2000.0), "postgres / queue")
    assert grades["throughput (runs/s, the one worker's drain)"] == MACHINE
    assert grades["p50 (queue wait)"] == AMBER
    assert rows.loc["p50 (queue wait)", WHY].endswith("(0.18x, outside ±50 %): the drain rate does not explain it")


def drain_section(tmp_path: Path, cpu_4: float, rate_4: float) -> PageSection:
    """32 runs waiting 0.2 s each: one thread drains 4 runs/s at 20 % of a core (50 ms of CPU a run), four drain
    ``rate_4`` at ``cpu_4`` % of a core."""
    runs: dict[str, Path | None] = {}
    for workers, per_s, cpu in ((1, 4.0, 20.0), (4, rate_4, cpu_4)):
        run = tmp_path / f"drain-{workers}"
        drain = {"runs": 32, "batch": 32, "dispatched": 32, "runs_per_s": per_s, "drain_s": 32 / per_s}
        batch(run, drain, {"kneo_embedded_provider_delay": 0.2, "kneo_embedded_workers": workers})
        sampled(run, int(32 / per_s) + 1, {KNEO_PID.format(0): cpu})
        runs[f"drain-{workers}"] = run
    section = PageSection()
    add_kneo_rows(section, runs, cores=2)
    return section


def test_a_drain_ratio_kneo_serv_did_not_hold_at_a_core_stays_amber_with_the_models_ratio(tmp_path):
    rows, grades = graded(drain_section(tmp_path, 60.0, 11.0), "N worker threads")
    why = rows.loc["4 workers ÷ 1 worker", WHY]
    assert grades["4 workers ÷ 1 worker"] == AMBER  # 2.75x of roughly 4x, and 60 % of a core is no ceiling
    assert why.startswith("kneo-serv's CPU a run: 50 ms with 1 worker thread (20 % of a core over the 8.0 s drain)")
    # (0.2 + 0.050) / (0.05 + 0.055) from each drain's own CPU
    assert "(d + c₁) / (d / 4 + c_4) = 2.39x beside the measured 2.75x" in why
    assert why.endswith("the page's 3.0x (roughly 4x less 25 %) needs c ≤ 25 ms")


def test_a_drain_ratio_kneo_serv_held_at_a_core_and_the_model_explains_is_machine_bound(tmp_path):
    rows, grades = graded(drain_section(tmp_path, 90.0, 9.0), "N worker threads")
    assert grades["4 workers ÷ 1 worker"] == MACHINE
    assert rows.loc["4 workers ÷ 1 worker", WHY].startswith(
        "machine-bound: kneo-serv's one process at 90 % of a core, near a full core; kneo-serv's CPU a run: 50 ms"
    )


def soak_section(tmp_path: Path, service: float) -> PageSection:
    run = tmp_path / "soak"
    submit = {"step": 0, "request_type": "run submit", "name": "agent:echo.yaml", "users": 16, "requests": 1000}
    steps(run, [{**submit, "failures": 0, "rps": 17.5, "p50_ms": 30, "p99_ms": 90, "duration_s": 57}])
    (run / "plan.yaml").write_text("kind: soak\nrate: 24\nduration: 60s\nwarmup: 3s\n")
    batch(run, {"runs": 1050, "batch": 3000, "dispatched": 1050, "runs_per_s": 17.5, "drain_s": 60.0})
    sampled(run, 60, {KNEO_PID.format(0): service})
    section = PageSection()
    add_kneo_rows(section, {"soak": run}, cores=2)
    return section


def test_a_soak_kneo_serv_held_near_a_core_is_machine_bound_with_what_the_rates_would_take(tmp_path):
    rows, grades = graded(soak_section(tmp_path, 82.0), "Sustained-load soak")
    row = "runs/s over the soak (drained)"
    assert grades[row] == MACHINE  # set by the stand-in's rate, and bound by kneo-serv below it
    assert rows.loc[row, WHY].startswith(
        "machine-bound: kneo-serv's one process at 82 % of a core, near a full core, over the 60.0 s soak"
    )
    assert rows.loc[row, WHY].endswith("the plan's 24/s would take 112 %")  # 47 ms a run at 24 a second


def test_a_soak_kneo_serv_did_not_bound_stays_amber(tmp_path):
    rows, grades = graded(soak_section(tmp_path, 40.0), "Sustained-load soak")
    assert grades["runs/s over the soak (drained)"] == AMBER
    why = rows.loc["runs/s over the soak (drained)", WHY]
    assert why.startswith("kneo-serv's one process at 40 % of a core")
    assert "below a core, its CPU alone did not set the rate" in why


def delay_section(tmp_path: Path, machine: float) -> PageSection:
    """8 runs in flight over 8 processes, each waiting 0.5 s: 14 runs/s, p50 564 ms, kneo-serv's 8 processes at 7 %
    of a core each over the step measured after a 2 s warm-up."""
    run = tmp_path / "provider-delay"
    run.mkdir(parents=True)
    pd.DataFrame([{**sync(8, 0, 14.0, 564.0), "started_at": START}]).to_csv(run / "steps.csv", index=False)
    (run / "plan.yaml").write_text("kind: step_ramp\nsteps: [8]\nstep_time: 12s\nwarmup: 2s\n")
    cpu = {KNEO_PID.format(n): 7.0 for n in range(8)} | {"generator": 5.0, PG: 10.0, "machine": machine}
    sampled(run, 13, cpu)
    section = PageSection()
    add_kneo_rows(section, {"provider-delay": run}, cores=2)
    return section


def test_a_provider_delay_overhead_past_its_own_cpu_stays_amber_and_says_how_much_its_cpu_is(tmp_path):
    rows, grades = graded(delay_section(tmp_path, 80.0), "0.5 s simulated provider delay")
    row = "platform overhead over the delay (p50 - 500 ms)"
    assert grades[row] == AMBER
    # 56 % of a core over 14 runs/s is 40 ms a run; the generator's 5 % and PostgreSQL's 10 % 11 ms
    assert rows.loc[row, WHY] == (
        "kneo-serv's 8 processes at 7 % of a core each, 56 % together over the 5.0 s step; of the 64 ms over the "
        "delay, 40 ms is kneo-serv's CPU a run, alone 3.08x the page's whole 13 ms (within ±300 %), 11 ms the "
        "generator's and PostgreSQL's (15 % of a core beside it) and 13 ms no side computing (loopback, the store's "
        "I/O, hand-offs, a wait for a core)"
    )


def test_a_provider_delay_overhead_on_a_filled_machine_is_machine_bound(tmp_path):
    rows, grades = graded(delay_section(tmp_path, 190.0), "0.5 s simulated provider delay")
    row = "platform overhead over the delay (p50 - 500 ms)"
    assert grades[row] == MACHINE
    assert rows.loc[row, WHY].startswith("machine-bound: the machine 190 % busy of 200 %")


def test_provider_delay_rows_the_sampler_did_not_read_keep_their_colour_and_say_nothing_was_measured(tmp_path):
    # a quarter-scale step of 2 s: the sampler's first CPU round came after it
    run = tmp_path / "provider-delay"
    run.mkdir(parents=True)
    pd.DataFrame([{**sync(8, 0, 10.5, 654.0), "started_at": START, "duration_s": 2.0}]).to_csv(
        run / "steps.csv", index=False
    )
    frame = pd.DataFrame(
        [(START + 3.8, 3.8, 0, 0, "generator", "fds", 18.0)],
        columns=["time", "elapsed_s", "round", "step", "source", "metric", "value"],
    )
    frame.to_csv(run / "resources.csv", index=False)
    section = PageSection()
    add_kneo_rows(section, {"provider-delay": run}, cores=2)
    rows, grades = graded(section, "0.5 s simulated provider delay")
    overhead = "platform overhead over the delay (p50 - 500 ms)"
    assert grades[overhead] == "red" and grades["throughput at 8 concurrent (runs/s)"] == AMBER
    assert rows.loc[overhead, WHY] == (
        "no CPU of kneo-serv sampled within the step, so nothing measured here says what bounded it"
    )


def test_provider_delay_throughput_and_p50_that_stray_follow_the_overhead(tmp_path):
    # the filled machine's step, 11 runs/s at p50 654 ms: both follow the 154 ms overhead, bound as it is
    run = tmp_path / "provider-delay"
    run.mkdir(parents=True)
    pd.DataFrame([{**sync(8, 0, 11.0, 654.0), "started_at": START}]).to_csv(run / "steps.csv", index=False)
    (run / "plan.yaml").write_text("kind: step_ramp\nwarmup: 2s\n")
    sampled(run, 13, {KNEO_PID.format(n): 7.0 for n in range(8)} | {"machine": 190.0})
    section = PageSection()
    add_kneo_rows(section, {"provider-delay": run}, cores=2)
    rows, grades = graded(section, "0.5 s simulated provider delay")
    throughput = "throughput at 8 concurrent (runs/s)"
    assert grades[throughput] == MACHINE and grades["p50"] == MACHINE
    assert rows.loc[throughput, WHY] == (
        "machine-bound: 8 runs in flight, each the 0.5 s delay plus the 154 ms overhead (its row): 12.2 runs/s"
    )
