"""Batch mode's shared tickets and the round-robin spread over several service processes, without a service."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.users.kneo_user import batch_run_sent, service_hosts, take_batch_ticket


class Plan:
    """A FAKE plan shape: only whether its end was asked for."""

    ended = 0

    def request_end(self) -> None:
        self.ended += 1


def test_a_batch_hands_out_exactly_its_size_between_the_users():
    environment = SimpleNamespace()
    taken = [take_batch_ticket(environment, 3) for _ in range(5)]
    assert taken == [True, True, True, False, False]


def test_the_plan_ends_once_the_batchs_last_submit_is_answered_not_before_and_once():
    environment = SimpleNamespace(shape_class=Plan(), runner=None)
    assert take_batch_ticket(environment, 2) and take_batch_ticket(environment, 2)
    batch_run_sent(environment)  # one of two answered, the other in flight
    assert environment.shape_class.ended == 0
    assert not take_batch_ticket(environment, 2)  # none left: a user idles
    batch_run_sent(environment)
    assert environment.shape_class.ended == 1
    batch_run_sent(environment)  # nothing more to end
    assert environment.shape_class.ended == 1


def test_a_worker_or_a_run_without_a_plan_keeps_its_own_end():
    from locust.runners import WorkerRunner

    class FakeWorker(WorkerRunner):
        """A FAKE worker runner: only its type (nothing started, nothing to stop)."""

        def __init__(self) -> None:
            pass

        def __del__(self) -> None:
            pass

    worker = SimpleNamespace(shape_class=Plan(), runner=FakeWorker())
    assert take_batch_ticket(worker, 1)
    batch_run_sent(worker)
    assert worker.shape_class.ended == 0  # the master's plan ends the run
    planless = SimpleNamespace(shape_class=None, runner=None)
    assert take_batch_ticket(planless, 1)
    batch_run_sent(planless)  # no plan to end: -t or a STOP ends it


def test_hosts_are_the_host_then_each_extra_url_once():
    assert service_hosts("http://127.0.0.1:1/", " http://127.0.0.1:2,http://127.0.0.1:1,,") == [
        "http://127.0.0.1:1",
        "http://127.0.0.1:2",
    ]


def test_a_host_that_is_not_a_url_is_a_usage_error():
    with pytest.raises(UsageError, match="--kneo-hosts"):
        service_hosts("http://127.0.0.1:1", "127.0.0.1:2")
