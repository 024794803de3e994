"""quic-go's ACK rules as pure functions: a pending ACK made due at once, a held ACK's end kept until it is sent."""

from __future__ import annotations

from swarmgauge.quic.acks import MAX_ACK_DELAY, OVERDUE, ack_hold_until, overdue_ack_at


def test_a_pending_ack_is_made_just_overdue():
    now = 100.0
    assert overdue_ack_at(now + MAX_ACK_DELAY, now) == now - OVERDUE


def test_an_ack_already_overdue_or_absent_is_left_alone():
    assert overdue_ack_at(99.0, 100.0) == 99.0
    assert overdue_ack_at(None, 100.0) is None


def test_an_ack_hold_starts_at_the_first_ask_and_keeps_its_end_until_forgotten():
    until = ack_hold_until(None, 100.0)
    assert until == 100.0 + MAX_ACK_DELAY
    assert ack_hold_until(until, 100.02) == until  # asked again: the hold does not move on
    assert ack_hold_until(None, 100.03) == 100.03 + MAX_ACK_DELAY  # sent, then a new hold
