"""Batch mode's shared tickets and the round-robin spread over several service processes, without a service."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.users.kneo_user import service_hosts, take_batch_ticket


def test_a_batch_hands_out_exactly_its_size_between_the_users():
    environment = SimpleNamespace()
    taken = [take_batch_ticket(environment, 3) for _ in range(5)]
    assert taken == [True, True, True, False, False]


def test_hosts_are_the_host_then_each_extra_url_once():
    assert service_hosts("http://127.0.0.1:1/", " http://127.0.0.1:2,http://127.0.0.1:1,,") == [
        "http://127.0.0.1:1",
        "http://127.0.0.1:2",
    ]


def test_a_host_that_is_not_a_url_is_a_usage_error():
    with pytest.raises(UsageError, match="--kneo-hosts"):
        service_hosts("http://127.0.0.1:1", "127.0.0.1:2")
