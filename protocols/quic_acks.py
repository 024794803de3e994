"""quic-go's acknowledgement habit on aioquic's sans-IO ``QuicConnection``: wait up to 25 ms, or ride on a packet.

aioquic acknowledges 1 ms after an ack-eliciting packet although it advertises ``max_ack_delay`` 25 ms, and it
writes an ACK frame only once that timer is due, so a pending ACK never rides on a packet sent before it. quic-go
(the real demarkus server and its Go client) waits up to the 25 ms but puts a pending ACK into any packet it sends.
The client driver and the reference server both call these, so a request carries the ACK of the previous answer
and an answer carries the ACK of its request: fewer datagrams to build and decrypt per request, and the server
frees a finished stream (its MAX_STREAMS credit) when the next request arrives, not 25 ms later.
No I/O here: the caller passes ``now`` and sends what ``datagrams_to_send`` returns.
"""

from __future__ import annotations

from aioquic import tls
from aioquic.quic.connection import QuicConnection

MAX_ACK_DELAY = 0.025  # seconds: quic-go's default, and what aioquic advertises
OVERDUE = 1e-6  # aioquic paces a packet unless an ACK is overdue (strictly before ``now``), so make it just that


def delay_acks(quic: QuicConnection) -> None:
    """Acknowledge up to ``MAX_ACK_DELAY`` after an ack-eliciting packet (call before connecting or accepting)."""
    quic._ack_delay = MAX_ACK_DELAY


def ack_with_next_packet(quic: QuicConnection, now: float) -> None:
    """Let a pending 1-RTT ACK go out in the packet about to be sent, as quic-go does, instead of on its timer."""
    space = quic._spaces.get(tls.Epoch.ONE_RTT)
    if space is not None and space.ack_at is not None and space.ack_at >= now:
        space.ack_at = now - OVERDUE
