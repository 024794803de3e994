"""QUIC, in one room: the engine adapter over aioquic and qh3 (``engine``, with qh3's private seams in
``qh3_patches`` and the ACK timing both ends share in ``acks``), and the gevent driver the Mark client runs on
(``driver``, over a ``transport``, with its ``streams``, ``errors`` and ``settings``).

The engine half is sans-IO (no gevent, no Locust); the driver half runs on gevent. The layer table in
ARCHITECTURE.md names them ``engines`` and ``quic``.
"""
