"""pprof and expvar sources against a real local HTTP server serving bodies in Go's formats."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners.sources import SourceError, parse_source
from swarmgauge.listeners.sources.goheap import parse_pprof_memstats

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

# the shape of Go's /debug/pprof/heap?debug=1 (runtime/pprof writeHeapInternal): records, then the MemStats trailer
PPROF_BODY = """heap profile: 3: 1581056 [27: 9175040] @ heap/1048576
1: 1048576 [1: 1048576] @ 0x43e5a5 0x4b9a2a 0x4b9a0b 0x46f5a1
#	0x4b9a29	main.loadMatrix+0x49	/src/internal/brain/embedmodel.go:41

2: 532480 [26: 8126464] @ 0x4c1e85 0x46f5a1
#	0x4c1e84	main.search+0x64	/src/internal/brain/search.go:118


# runtime.MemStats
# Alloc = 2375120
# TotalAlloc = 9838408
# Sys = 14001160
# Lookups = 0
# Mallocs = 10962
# Frees = 9170
# HeapAlloc = 2375120
# HeapSys = 7831552
# HeapIdle = 4456448
# HeapInuse = 3375104
# HeapReleased = 4194304
# HeapObjects = 1792
# Stack = 524288 / 524288
# MSpan = 70720 / 81600
# MCache = 9600 / 15600
# BuckHashSys = 1445183
# GCSys = 3171856
# OtherSys = 931081
# NextGC = 4194304
# LastGC = 1764672067883513000
# PauseNs = [27403 21740 0 0 0]
# PauseEnd = [1764672067881118000 1764672067883513000 0 0 0]
# NumGC = 2
# NumForcedGC = 0
# GCCPUFraction = 0.0019326
# DebugGC = false
# MaxRSS = 11546624
"""
EXPVAR_BODY = {
    "cmdline": ["/usr/local/bin/brain-serve"],
    "memstats": {
        "Alloc": 2375120,
        "TotalAlloc": 9838408,
        "Sys": 14001160,
        "HeapAlloc": 2375120,
        "HeapSys": 7831552,
        "HeapInuse": 3375104,
        "HeapObjects": 1792,
        "NextGC": 4194304,
        "NumGC": 2,
        "PauseNs": [27403, 21740],
        "BySize": [{"Size": 0, "Mallocs": 0}],
    },
}


class GoDebugHandler(BaseHTTPRequestHandler):
    """Serves fixed bodies at Go's debug paths; /broken answers 500, /html answers a page."""

    def do_GET(self):
        routes = {
            "/debug/pprof/heap": ("text/plain", PPROF_BODY),
            "/debug/vars": ("application/json", json.dumps(EXPVAR_BODY)),
            "/html": ("text/html", "<html>hi</html>"),
        }
        path = self.path.split("?")[0]
        if path not in routes:
            self.send_response(500)
            self.end_headers()
            return
        kind, body = routes[path]
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def go_debug_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), GoDebugHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_pprof_trailer_gives_heap_figures(go_debug_server):
    got = {r.metric: r.value for r in parse_source(f"pprof:{go_debug_server}/debug/pprof/heap").sample()}
    assert got == {
        "heap_alloc_bytes": 2375120,
        "heap_inuse_bytes": 3375104,
        "heap_sys_bytes": 7831552,
        "heap_objects": 1792,
        "sys_bytes": 14001160,
        "next_gc_bytes": 4194304,
        "gc_count": 2,
    }


def test_expvar_memstats(go_debug_server):
    got = {r.metric: r.value for r in parse_source(f"expvar:{go_debug_server}/debug/vars").sample()}
    assert got["heap_inuse_bytes"] == 3375104 and got["sys_bytes"] == 14001160 and got["gc_count"] == 2


def test_pprof_without_trailer_and_http_errors_are_source_errors(go_debug_server):
    with pytest.raises(SourceError, match="MemStats"):
        parse_pprof_memstats("heap profile: 0: 0 [0: 0] @ heap/1048576\n")
    with pytest.raises(SourceError, match="HTTP 500"):
        parse_source(f"pprof:{go_debug_server}/nothing").sample()
    with pytest.raises(SourceError, match="not JSON"):
        parse_source(f"expvar:{go_debug_server}/html").sample()


def test_unreachable_endpoint_is_a_source_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SourceError, match="ConnectionError"):
        parse_source(f"expvar:http://127.0.0.1:{port}/debug/vars").sample()


def test_bad_url_is_a_usage_error():
    with pytest.raises(UsageError):
        parse_source("pprof:localhost:6060/debug/pprof/heap")


def test_a_query_or_a_trailing_slash_still_reaches_the_text_profile_and_the_vars():
    from swarmgauge.listeners.sources.goheap import expvar_url, pprof_heap_url

    base = "http://127.0.0.1:6060"
    assert pprof_heap_url(base + "/debug/pprof/heap?gc=1") == base + "/debug/pprof/heap?gc=1&debug=1"
    assert pprof_heap_url(base + "/debug/pprof/heap/") == base + "/debug/pprof/heap?debug=1"
    assert pprof_heap_url(base + "/debug/pprof/") == base + "/debug/pprof/heap?debug=1"
    assert pprof_heap_url(base + "/debug/pprof/heap?debug=1") == base + "/debug/pprof/heap?debug=1"
    assert expvar_url(base + "/debug/vars/") == base + "/debug/vars"
    assert expvar_url(base) == base + "/debug/vars"
