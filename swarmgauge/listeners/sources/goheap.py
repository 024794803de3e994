"""``pprof:URL`` and ``expvar:URL`` sources: a Go program's ``runtime.MemStats`` over HTTP.

``pprof:`` reads the ``# runtime.MemStats`` trailer of ``/debug/pprof/heap?debug=1`` (``debug=1`` is added when the
query has no ``debug``, so ``?gc=1`` works; ``/debug/pprof/`` alone means its heap profile); ``expvar:`` reads the
``memstats`` object of ``/debug/vars``. A trailing slash is dropped: Go serves both at the exact path only.
Both give HeapAlloc, HeapInuse, Sys and NumGC without a profile parser. Each poll is one short GET with a timeout; no connection is kept.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests

from swarmgauge.errors import UsageError

from . import Reading, SourceError

HTTP_TIMEOUT_S = 3.0
MEMSTATS_LINE = re.compile(r"^# (\w+) = (\d+(?:\.\d+)?)\s*$", re.MULTILINE)
# MemStats field -> metric name; the same for both endpoints
MEMSTATS_METRICS = {
    "HeapAlloc": "heap_alloc_bytes",
    "HeapInuse": "heap_inuse_bytes",
    "HeapSys": "heap_sys_bytes",
    "HeapObjects": "heap_objects",
    "Sys": "sys_bytes",
    "NextGC": "next_gc_bytes",
    "NumGC": "gc_count",
}


def check_url(kind: str, url: str) -> str:
    if not re.match(r"^https?://[^/\s]+", url):
        raise UsageError(f"{kind}:{url}: expected an http:// or https:// URL")
    return url


def pprof_heap_url(url: str) -> str:
    """The ``debug=1`` text form of the heap profile, whatever query or trailing slash the URL came with."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if path.endswith("/debug/pprof") or path == "":
        path += "/heap" if path.endswith("/debug/pprof") else "/debug/pprof/heap"
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not any(key == "debug" for key, _ in query):
        query.append(("debug", "1"))
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(query), ""))


def expvar_url(url: str) -> str:
    """``/debug/vars`` without a trailing slash (Go's mux answers ``/debug/vars/`` with 404); the bare host means it."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") or "/debug/vars"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def http_get(url: str) -> requests.Response:
    try:
        response = requests.get(url, timeout=HTTP_TIMEOUT_S)
    except requests.RequestException as exc:
        raise SourceError(f"GET {url}: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise SourceError(f"GET {url}: HTTP {response.status_code}")
    return response


def memstats_readings(stats: dict[str, Any]) -> list[Reading]:
    """Turn MemStats fields into readings, in a fixed order; fields that are absent are left out."""
    return [
        Reading(metric, float(stats[field]))
        for field, metric in MEMSTATS_METRICS.items()
        if isinstance(stats.get(field), (int, float))
    ]


def parse_pprof_memstats(body: str) -> dict[str, float]:
    """The ``# runtime.MemStats`` trailer of a ``debug=1`` heap profile as ``{field: value}``."""
    marker = body.rfind("# runtime.MemStats")
    if marker < 0:
        raise SourceError("pprof body has no '# runtime.MemStats' section (is it ?debug=1?)")
    return {m[1]: float(m[2]) for m in MEMSTATS_LINE.finditer(body, marker)}


class PprofSource:
    """Polls ``/debug/pprof/heap?debug=1``."""

    label = "pprof"

    def __init__(self, url: str) -> None:
        self.url = pprof_heap_url(url)

    @classmethod
    def from_spec(cls, argument: str) -> PprofSource:
        return cls(check_url("pprof", argument))

    def sample(self) -> list[Reading]:
        readings = memstats_readings(parse_pprof_memstats(http_get(self.url).text))
        if not readings:
            raise SourceError(f"{self.url}: MemStats section has none of {', '.join(MEMSTATS_METRICS)}")
        return readings


class ExpvarSource:
    """Polls ``/debug/vars``."""

    label = "expvar"

    def __init__(self, url: str) -> None:
        self.url = expvar_url(url)

    @classmethod
    def from_spec(cls, argument: str) -> ExpvarSource:
        return cls(check_url("expvar", argument))

    def sample(self) -> list[Reading]:
        try:
            doc = json.loads(http_get(self.url).text)
        except ValueError:
            raise SourceError(f"{self.url}: body is not JSON") from None
        stats = doc.get("memstats") if isinstance(doc, dict) else None
        if not isinstance(stats, dict):
            raise SourceError(f"{self.url}: no 'memstats' object")
        readings = memstats_readings(stats)
        if not readings:
            raise SourceError(f"{self.url}: memstats has none of {', '.join(MEMSTATS_METRICS)}")
        return readings
