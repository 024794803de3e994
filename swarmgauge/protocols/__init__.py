"""Pure codecs and state machines: bytes in, values out; no sockets, no gevent, no Locust."""
