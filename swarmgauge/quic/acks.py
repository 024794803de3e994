"""quic-go's acknowledgement habit, as numbers and one rule: wait up to 25 ms, or ride on the next packet.

aioquic acknowledges 1 ms after an ack-eliciting packet although it advertises ``max_ack_delay`` 25 ms, and it
writes an ACK frame only once that timer is due, so a pending ACK never rides on a packet sent before it. quic-go
(the real demarkus server and its Go client) waits up to the 25 ms but puts a pending ACK into any packet it sends.
The client driver and the reference server both follow it, so a request carries the ACK of the previous answer
and an answer carries the ACK of its request: fewer datagrams to build and decrypt per request, and the server
frees a finished stream (its MAX_STREAMS credit) when the next request arrives, not 25 ms later.
Pure: applying the rule to a library's connection is ``swarmgauge.quic.engine``'s job.
"""

from __future__ import annotations

MAX_ACK_DELAY = 0.025  # seconds: quic-go's default, and what aioquic advertises
OVERDUE = 1e-6  # aioquic paces a packet unless an ACK is overdue (strictly before ``now``), so make it just that


def overdue_ack_at(ack_at: float | None, now: float) -> float | None:
    """The ACK deadline that makes a pending ACK go out in the packet sent at ``now`` (None: no ACK pending)."""
    if ack_at is not None and ack_at >= now:
        return now - OVERDUE
    return ack_at


def ack_hold_until(held_until: float | None, now: float) -> float:
    """When an ACK-only send asked about at ``now`` must go alone: quic-go's rule where the engine cannot be told it
    (qh3 ACKs a FIN at once). The hold starts at the first ask (``held_until`` None) and lasts ``MAX_ACK_DELAY``,
    so the next request carries the ACK; the caller holds while ``now`` is before it and forgets it once it sends.
    One rule for the Mark client's driver and the MCP gateway's hop (a float, not an object: a driver per user)."""
    return now + MAX_ACK_DELAY if held_until is None else held_until
