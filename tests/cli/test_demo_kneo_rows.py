"""The kneo page's workloads beyond the sweeps: the soak dispatches at a rate to 16 workers at kneo-serv's own idle
poll, the worker drain runs at 1 and 4 workers on a provider-bound batch, and the page's load time does not grow."""

from __future__ import annotations

from swarmgauge.cli.demo_kneo_rows import DRAIN_BATCH, QUEUE_BATCH, SOAK_RATE, drain, queue_batch, soak
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


def test_the_kneo_page_plans_no_more_load_than_before_its_drain_rows():
    kneo = pages(["kneo"])[0]
    assert {"drain-1", "drain-4", "soak", "postgres-queue"} <= {w.name for w in kneo.workloads}
    assert sum(w.planned_seconds() for w in kneo.workloads) <= 214  # the page's planned load before (3.6 min)


def test_the_queue_batch_is_the_pages_at_scale_1_and_shrinks_below_it_as_a_floor_does_saying_so():
    """The drain is most of the queue row's time: below scale 1 the batch shrinks with the square root of the scale
    (250 at 0.25) and its sending time with it; the workload's line and plan name both batch sizes."""
    for scale, batch, sending in ((2.0, QUEUE_BATCH, 48), (1.0, QUEUE_BATCH, 24), (0.5, 354, 15), (0.25, 250, 10)):
        workload = queue_batch(scale)
        assert option(workload, "--kneo-batch") == str(batch) and option(workload, "--kneo-mode") == "batch"
        assert workload.planned_seconds() == sending
        shortened = "the page's 500 shortened with --scale"
        assert (shortened in workload.what) == (batch != QUEUE_BATCH), workload.what
        assert f"submit {batch} runs" in workload.plan["description"]
