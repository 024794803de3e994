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


class CountingAction:
    """A parser action whose ``is_secret`` counts its reads."""

    reads = 0

    def __init__(self, dest: str, secret: bool) -> None:
        self.dest, self._secret = dest, secret

    @property
    def is_secret(self) -> bool:
        CountingAction.reads += 1
        return self._secret


def test_a_tree_is_redacted_with_its_secrets_looked_up_once_and_each_action_read_once(monkeypatch):
    """A run's checkpoint redacts every string of run.json: looked up per string and per option name, the declared
    secrets were read 2.9 M times a write, holding the event loop 135-290 ms of CPU at each step's checkpoint."""
    actions = [CountingAction(f"opt_{n}", secret=(n == 7)) for n in range(60)]
    monkeypatch.setattr(CountingAction, "reads", 0)
    monkeypatch.setattr(run_redaction, "_parser_ref", [])  # this process's parser and names come back afterwards
    monkeypatch.setattr(run_redaction, "_actions_read", [0])
    monkeypatch.setattr(run_redaction, "SECRET_OPTION_NAMES", set())
    run_redaction.keep_parser(SimpleNamespace(_actions=actions))
    options = {f"opt_{n}": f"value-{n}" for n in range(60)}
    environment = SimpleNamespace(parsed_options=SimpleNamespace(**options))
    lookups = []
    known = run_redaction._known_secret_values
    monkeypatch.setattr(run_redaction, "_known_secret_values", lambda env: lookups.append(env) or known(env))
    tree = {"steps": [{"name": f"step {n} value-7", "label": "value-3"} for n in range(200)]}
    shown = run_redaction.redact_tree(tree, environment)
    assert shown["steps"][0] == {"name": "step 0 ***", "label": "value-3"}
    assert len(lookups) == 1
    assert CountingAction.reads == len(actions)
    run_redaction.redacted_options(environment)
    assert len(lookups) == 2 and CountingAction.reads == len(actions)
