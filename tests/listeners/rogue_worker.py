"""A rogue worker: Locust's own rpc client connects to a master like a worker and prints every message it gets.

``python -m tests.listeners.rogue_worker HOST PORT SECONDS``; listens SECONDS, then exits.
"""

import sys
import time

from locust import __version__
from locust.rpc import Message, zmqrpc

client = zmqrpc.Client(sys.argv[1], int(sys.argv[2]), "rogue")
client.send(Message("client_ready", __version__, "rogue"))
deadline = time.monotonic() + float(sys.argv[3])
while time.monotonic() < deadline:
    if client.socket.poll(200):
        message = client.recv()
        print(message.type, message.data, flush=True)
