"""What the master-worker channel lets through: no secret option or value in a message, keys that pair up."""

from __future__ import annotations

import logging

import zmq
from locust.rpc.protocol import Message

from swarmgauge.core import worker_channel
from swarmgauge.core.worker_channel import SECRETS_SET, RefusalLog, derive_keys, scrub_message
from swarmgauge.redaction import register_secret


def _is_secret(dest: str) -> bool:
    return dest in {"mark_token", "mcp_token"}


def test_a_spawn_message_keeps_the_options_but_only_the_names_of_the_secrets_set():
    options = {"mark_token": "SGTOKUNIT1", "mcp_token": "", "host": "mark://127.0.0.1:6309", "num_users": 4}
    message = Message("spawn", {"host": "h", "parsed_options": options}, "worker-1")
    sent = scrub_message(message, _is_secret)
    assert sent.data["parsed_options"] == {
        "host": "mark://127.0.0.1:6309",
        "num_users": 4,
        SECRETS_SET: ["mark_token"],
    }
    assert sent.node_id == "worker-1" and sent.type == "spawn"
    assert options["mark_token"] == "SGTOKUNIT1"  # the master's own options (Locust sends vars() of them) untouched


def test_a_registered_secret_value_is_taken_out_of_any_message_at_any_depth():
    register_secret("SGTOKNESTED7")
    message = Message("custom", {"rows": [{"args": "--publish-token SGTOKNESTED7 --port 1"}], "n": 1}, "w")
    assert scrub_message(message, _is_secret).data == {"rows": [{"args": "--publish-token *** --port 1"}], "n": 1}


def test_a_message_without_secrets_is_sent_as_it_is():
    message = Message("heartbeat", None, "w")
    assert scrub_message(message, _is_secret) is message


def test_the_derived_key_pairs_are_curve_pairs_the_same_for_the_same_key_and_apart_for_another():
    keys = derive_keys(b"0123456789abcdef0123")
    assert zmq.curve_public(keys.server_secret) == keys.server_public
    assert zmq.curve_public(keys.client_secret) == keys.client_public
    assert keys.server_public != keys.client_public
    assert derive_keys(b"0123456789abcdef0123") == keys
    assert derive_keys(b"0123456789abcdef0124").server_public != keys.server_public


def test_refused_handshakes_are_logged_once_then_once_per_interval(caplog):
    refusals = RefusalLog()
    with caplog.at_level(logging.WARNING, logger="swarmgauge.cluster"):
        for second in range(30):
            refusals.refused("handshake failed", now=1000.0 + second / 10)
        refusals.refused("handshake failed", now=1000.0 + worker_channel.REFUSAL_LOG_INTERVAL_S + 1)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and refusals.count == 31
    assert "1 refused so far" in lines[0] and "31 refused so far (30 since the last line)" in lines[1]


def test_a_throwaway_secret_code_generated_for_its_own_target_goes_to_the_workers_and_nothing_else():
    register_secret("SGTOKGENERATED3")
    worker_channel.share_with_workers("generated_token")
    options = {"generated_token": "SGTOKGENERATED3", "mark_token": "SGTOKUSERS4"}
    sent = scrub_message(Message("spawn", {"parsed_options": options}, "w"), lambda d: d.endswith("token"))
    assert sent.data["parsed_options"] == {"generated_token": "SGTOKGENERATED3", SECRETS_SET: ["mark_token"]}


def test_an_option_only_the_master_reads_is_not_sent_nor_named():
    worker_channel.keep_on_master("store_dsn")
    options = {"store_dsn": "postgresql://kneo:SGPWDSTORE5@127.0.0.1:5432/kneo", "num_users": 2}
    sent = scrub_message(Message("spawn", {"parsed_options": options}, "w"), _is_secret).data["parsed_options"]
    assert sent == {"num_users": 2, SECRETS_SET: []}
