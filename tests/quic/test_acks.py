"""quic-go's ACK rule as a pure function: a pending ACK becomes due at once, nothing pending stays nothing."""

from __future__ import annotations

from swarmgauge.quic.acks import MAX_ACK_DELAY, OVERDUE, overdue_ack_at


def test_a_pending_ack_is_made_just_overdue():
    now = 100.0
    assert overdue_ack_at(now + MAX_ACK_DELAY, now) == now - OVERDUE


def test_an_ack_already_overdue_or_absent_is_left_alone():
    assert overdue_ack_at(99.0, 100.0) == 99.0
    assert overdue_ack_at(None, 100.0) is None
