"""The kneo page's workloads beyond the sweeps: the soak dispatches at a rate to 16 workers at kneo-serv's own idle
poll, the worker drain runs at 1 and 4 workers on a provider-bound batch, and the page's load time does not grow."""

from __future__ import annotations

from swarmgauge.cli.demo_kneo_rows import (
    DRAIN_BATCH,
    QUEUE_BATCH,
    SOAK_RATE,
    anchored,
    drain,
    queue_batch,
    soak,
    store_bound,
)
from swarmgauge.cli.demo_pages import pages


def option(workload, flag: str) -> str:
    return workload.options[workload.options.index(flag) + 1]


def test_the_soak_dispatches_at_a_rate_without_waiting_and_sleeps_idle_workers_as_kneo_serv_does():
    workload = soak(1.0)
    assert workload.plan["rate"] == SOAK_RATE and "users" not in workload.plan  # open model: arrivals, not a loop
    assert option(workload, "--kneo-mode") == "batch"  # submit only: no run waits on the one before it
    assert int(option(workload, "--kneo-batch")) > SOAK_RATE * 60  # the rate ends the soak, not the tickets
    assert option(workload, "--kneo-embedded-workers") == "16" and option(workload, "--kneo-embedded-idle-poll") == "1"


def test_the_drain_runs_one_and_four_workers_on_the_same_provider_bound_batch():
    one, four = drain(1, 1.0), drain(4, 1.0)
    assert (one.name, four.name) == ("drain-1", "drain-4")
    for workload, workers in ((one, "1"), (four, "4")):
        assert option(workload, "--kneo-embedded-workers") == workers
        assert option(workload, "--kneo-batch") == str(DRAIN_BATCH)
        assert float(option(workload, "--kneo-embedded-provider-delay")) > 0


def test_the_kneo_page_plans_no_more_than_half_a_minute_more_load_than_before_sqlite_on_two_processes():
    kneo = pages(["kneo"])[0]
    assert {"drain-1", "drain-4", "soak", "postgres-queue"} <= {w.name for w in kneo.workloads}
    # 202 s before SQLite's two-process row and the bracketing anchors (229 s), 249 s with the anchors interleaved
    assert sum(w.planned_seconds() for w in kneo.workloads) <= 249


def test_the_queue_batch_is_the_pages_at_scale_1_and_shrinks_below_it_as_a_floor_does_saying_so():
    """The drain is most of the queue row's time: below scale 1 the batch shrinks as a floor does, with the scale
    (125 at 0.25), and its sending time with it; the workload's line and plan name both batch sizes."""
    for scale, batch, sending in ((2.0, QUEUE_BATCH, 48), (1.0, QUEUE_BATCH, 24), (0.5, 250, 12), (0.25, 125, 6)):
        workload = queue_batch(scale)
        assert option(workload, "--kneo-batch") == str(batch) and option(workload, "--kneo-mode") == "batch"
        assert workload.planned_seconds() == sending
        shortened = "the page's 500 shortened with --scale"
        assert (shortened in workload.what) == (batch != QUEUE_BATCH), workload.what
        assert f"submit {batch} runs" in workload.plan["description"]


def test_both_stores_run_on_as_many_service_processes():
    """The store comparison at 8: SQLite over two processes on its one file beside PostgreSQL over two, SQLite
    without a PostgreSQL started for it, both at the idle poll of the one-process sweeps."""
    postgres, sqlite = store_bound(1.0), store_bound(1.0, "sqlite")
    assert (postgres.name, sqlite.name) == ("postgres-x2-sync", "sqlite-x2-sync")
    for workload in (postgres, sqlite):
        assert option(workload, "--kneo-embedded-processes") == "2"
        assert "--kneo-embedded-idle-poll" not in workload.options
    assert option(sqlite, "--kneo-embedded-store") == "sqlite" and "--kneo-embedded-fsync" not in sqlite.options
    assert option(postgres, "--kneo-embedded-store") == "postgres" and "--kneo-embedded-fsync" in postgres.options
    assert postgres.plan["steps"] == [1, 8] and sqlite.plan["steps"] == [8]
    assert "sqlite-x2-sync" in {w.name for w in pages(["kneo"])[0].workloads}


def test_a_sync_sweep_measures_its_concurrency_1_anchor_between_every_two_steps_at_scale_1():
    """The sweep's steps as stages, each held and warmed up as the step ramp had them, with the concurrency-1 step
    (the anchor) again after each: every step has its own anchors just before and after it. The anchors are shorter
    (7 s at scale 1, the same warm-up), so the two sweeps grow 20 s in all."""
    ramp = {"name": "s", "kind": "step_ramp", "steps": [1, 8, 16], "step_time": "9s", "warmup": "2s", "slos": ["x"]}
    plan = anchored({**ramp, "reference": {"rows": [{"name": "run sync"}]}})
    assert plan["kind"] == "stages" and "steps" not in plan and plan["slos"] == ["x"] and plan["reference"]
    assert [(s["users"], s["duration"], s["warmup"]) for s in plan["stages"]] == [
        (1, "7s", "2s"),
        (8, "9s", "2s"),
        (1, "7s", "2s"),
        (16, "9s", "2s"),
        (1, "7s", "2s"),
    ]
    assert [s["label"] for s in plan["stages"]] == ["1 users", "8 users", "1 users", "16 users", "1 users"]
    doubled = anchored({**ramp, "step_time": "18s", "warmup": "4s"}, 2.0)
    assert [(s["duration"], s["warmup"]) for s in doubled["stages"]][:2] == [("14s", "4s"), ("18s", "4s")]
    unanchored = anchored({**ramp, "steps": [8, 16]})  # no concurrency-1 step: nothing to read against
    assert [s["users"] for s in unanchored["stages"]] == [8, 16]
    for page in pages(["kneo"])[0].workloads[:2]:
        users = [s["users"] for s in page.plan["stages"]]
        assert page.plan["kind"] == "stages" and users[::2] == [1, 1, 1, 1] and 1 not in users[1::2]


def test_below_scale_1_a_sync_sweep_keeps_its_anchor_at_both_ends_and_plans_no_more_load():
    """``--scale 0.25`` is past its budget: below scale 1 the sweep keeps the bracket (the c=1 step at its start and
    end, each as long as a step), whose planned seconds are those of the plan before the interleaving."""
    ramp = {"name": "s", "kind": "step_ramp", "steps": [1, 8, 16], "step_time": "2s", "warmup": "0s"}
    plan = anchored(ramp, 0.25)
    assert [(s["users"], s["duration"], s["warmup"]) for s in plan["stages"]] == [
        (1, "2s", "0s"),
        (8, "2s", "0s"),
        (16, "2s", "0s"),
        (1, "2s", "0s"),
    ]
    for scale in (0.25, 0.5):
        for page in pages(["kneo"], scale)[0].workloads[:2]:
            assert [s["users"] for s in page.plan["stages"]][::4] == [1, 1] and len(page.plan["stages"]) == 5
    assert sum(w.planned_seconds() for w in pages(["kneo"], 0.25)[0].workloads) == 60  # 64 with the batch at 250
