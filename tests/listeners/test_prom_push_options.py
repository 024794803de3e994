"""The push options on their own: URLs checked at start-up, credentials kept out of what is shown, failures tallied."""

from __future__ import annotations

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners import run_redaction
from swarmgauge.listeners.prom_push import PushRecord, PushRejected, failure_kind, parse_endpoint


def test_credentials_leave_the_url_and_become_secrets():
    endpoint = parse_endpoint(
        "remote-write", "--prometheus-remote-write", "https://pusher:hunter%2342@h.example:9443/w?x=1"
    )
    assert endpoint.url == "https://h.example:9443/w?x=1"
    assert (endpoint.username, endpoint.password) == ("pusher", "hunter#42")
    assert endpoint.shown == "https://***@h.example:9443/w?x=1"
    assert "hunter" not in run_redaction.redact("failed: https://pusher:hunter%2342@h.example:9443/w and hunter#42")


def test_a_url_without_credentials_is_kept_as_given():
    endpoint = parse_endpoint("pushgateway", "--prometheus-push", "http://127.0.0.1:9091")
    assert (endpoint.url, endpoint.shown, endpoint.username) == ("http://127.0.0.1:9091", "http://127.0.0.1:9091", None)


@pytest.mark.parametrize("value", ["ftp://h:1", "127.0.0.1:9091", "http://", "http://h:port", "http://[::1"])
def test_a_bad_url_is_a_usage_error_naming_the_flag(value):
    with pytest.raises(UsageError, match="--prometheus-push"):
        parse_endpoint("pushgateway", "--prometheus-push", value)


def test_failures_are_counted_per_kind_and_reported_first_time_only():
    record = PushRecord()
    assert record.failed("remote-write", failure_kind(PushRejected(400, "out of order"))) is True
    assert record.failed("remote-write", failure_kind(PushRejected(400, "again"))) is False
    assert record.failed("remote-write", failure_kind(ConnectionError("refused"))) is True
    record.ok("remote-write")
    assert record.pushes == {"remote-write": 4}
    assert record.failures == {"remote-write": {"HTTP 400": 2, "ConnectionError": 1}}
