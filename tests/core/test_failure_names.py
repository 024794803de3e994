"""``bounded_reason``: server words in a failure name are kept as words, anything that varies per answer is not."""

from __future__ import annotations

import uuid

from swarmgauge.core.failure_names import MAX_REASON, bounded_reason


def test_codes_and_statuses_are_kept():
    for code in ("queue_full", "ERR_DEVICE_NOT_FOUND", "not-found", "going away mid-stream"):
        assert bounded_reason(code) == code


def test_ids_numbers_and_quoted_bodies_collapse():
    reasons = {bounded_reason(f"run {uuid.uuid4()} failed after {n} ms") for n in range(200)}
    assert reasons == {"run # failed after # ms"}
    assert {bounded_reason('{"detail": "' + uuid.uuid4().hex + '"}') for _ in range(50)} == {"other"}
    assert bounded_reason("code_5f3a9b") == "other" and bounded_reason("ERR_A 1 2 3 x") == "ERR_A # x"
    assert bounded_reason("") == "other" and bounded_reason(None) == "None"


def test_length_is_bounded():
    assert len(bounded_reason("word " * 1000)) <= MAX_REASON
    assert bounded_reason("x" * 1000) == "other"
