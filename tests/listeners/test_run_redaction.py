"""Redaction: secret option values, URL passwords and ``password=...`` pairs hidden in text and in the options."""

from __future__ import annotations

from types import SimpleNamespace

from swarmgauge.listeners import run_redaction


def test_redact_hides_secret_values_url_passwords_and_key_value_pairs():
    environment = SimpleNamespace(parsed_options=SimpleNamespace(api_token="abc-123-xyz", host="h"))
    text = "token abc-123-xyz dsn postgresql://app:hunter2@127.0.0.1/db password=s3cr3t&x=1"
    shown = run_redaction.redact(text, environment)
    for secret in ("abc-123-xyz", "hunter2", "s3cr3t"):
        assert secret not in shown
    assert "postgresql://app:***@127.0.0.1/db" in shown and "x=1" in shown
    assert run_redaction.redacted_options(environment) == {"api_token": "***", "host": "h"}
