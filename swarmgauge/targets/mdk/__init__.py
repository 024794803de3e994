"""A stand-in for the Tether MDK stack (Gateway, Kernel, Workers, mock devices), not the real MDK.

The real stack is not on npm and its HRPC transport needs a HyperDHT, so swarmgauge ships this stand-in with the
Gateway's benchmark HTTP routes (``/api/fleet/...``, ``/echo``) and the behaviour those routes show under load:
QUEUED-then-asynchronous commands, Worker health pings and ``ERR_WORKER_NOT_ROUTABLE``, driver-bound device reads
serialised per device, the 5 s device-data cache, an optional per-IP rate limit. Each component is its own OS
process so the failure drills can kill and restart it. Components talk JSON lines over loopback TCP (``rpc.py``).
"""
