"""The brain stand-in's state and what its routes do: the deterministic corpus, the worker semaphore, the fault
modes' retained memory, pinned results and zombie children (``targets/brain.py`` says what each mode reproduces).
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable
from typing import cast

from swarmgauge.targets.brain_zombies import ZombieSpawner, count_zombies

PROTOCOL_VERSION = "2024-11-05"
POOL_FULL = "Buffer manager exception: Unable to allocate memory! The buffer pool is full and no memory could be freed!"
_WORDS = [
    "quic",
    "mark",
    "stream",
    "fetch",
    "publish",
    "world",
    "etag",
    "cursor",
    "session",
    "gateway",
    "token",
    "agent",
    "kneo",
    "dispatch",
    "queue",
    "miner",
    "fleet",
    "hashrate",
    "pool",
    "brain",
    "leaf",
    "fact",
    "embed",
    "vector",
    "index",
    "search",
    "heap",
    "memory",
    "soak",
    "ramp",
    "retention",
    "prune",
    "version",
    "frontmatter",
    "lookup",
    "latency",
    "throughput",
    "worker",
    "semaphore",
    "ladybug",
    "buffer",
    "daemon",
    "model",
]


class ApiError(Exception):
    """An HTTP error answer: status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def build_corpus(size: int, seed: int = 2) -> list[dict]:
    """A deterministic corpus: the same ``size`` and ``seed`` always give the same leafs."""
    rng = random.Random(seed)
    leafs = []
    for i in range(size):
        words = rng.sample(_WORDS, 8)
        leafs.append(
            {
                "id": f"leaf-{i:04d}",
                "root": "facts" if i % 3 else "info",
                "text": " ".join(words),
                "body": " ".join(words * 4),
                "source": f"notes/{words[0]}.md",
                "valid_from": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
                "confidence": round(rng.random(), 2),
            }
        )
    return leafs


class Brain:
    """The stand-in's state: corpus, semaphore, and the two fault modes' retained memory and pinned results."""

    def __init__(
        self,
        *,
        workers: int = 4,
        corpus_size: int = 300,
        search_ms: float = 5.0,
        leak_per_search_kb: int = 0,
        pool_exhaustion: int = 0,
        model_load_ms: float = 0.0,
        zombies_per_search: int = 0,
    ) -> None:
        self.leafs = build_corpus(corpus_size)
        self.by_id = {leaf["id"]: leaf for leaf in self.leafs}
        self.semaphore = threading.BoundedSemaphore(max(1, workers))
        self.search_s = max(0.0, search_ms) / 1000.0
        self.leak_bytes = max(0, leak_per_search_kb) * 1024
        self.pool_size = max(0, pool_exhaustion)
        self.model_load_s = max(0.0, model_load_ms) / 1000.0
        self.model_loads = 0
        self.model_loaded = False
        self.zombies = ZombieSpawner(zombies_per_search)
        self.retained: list[bytearray] = []
        self.pinned_results = 0
        self.searches = 0
        self.lock = threading.Lock()

    def _load_model(self) -> bytearray | None:
        """One model load: a read buffer and the matrix filled for real, then the rest of the load time waited."""
        started = time.perf_counter()
        matrix = None
        if self.leak_bytes:
            read_buffer = bytearray(b"\x02") * self.leak_bytes
            matrix = bytearray(read_buffer)
            del read_buffer
        with self.lock:
            self.model_loads += 1
        remaining = self.model_load_s - (time.perf_counter() - started)
        if remaining > 0:
            time.sleep(remaining)
        return matrix

    def _embed(self) -> None:
        """The query embedding: with the leak every search reloads the model and keeps its matrix; fixed, once."""
        if self.leak_bytes:
            matrix = self._load_model()
            with self.lock:
                self.retained.append(cast(bytearray, matrix))  # leak_bytes set: _load_model built it
            return
        if self.model_load_s and not self.model_loaded:
            with self.lock:
                if self.model_loaded:
                    return
                self.model_loaded = True
            self._load_model()

    def _backend(self) -> None:
        if self.pool_size and self.pinned_results >= self.pool_size:
            raise ApiError(502, POOL_FULL)

    def search(self, params: dict[str, str]) -> dict:
        query = params.get("q", "").strip()
        if not query:
            raise ApiError(400, "missing required parameter q")
        try:
            n = int(params.get("n", "10"))
        except ValueError:
            raise ApiError(400, "n must be an integer") from None
        if not 1 <= n <= 100:
            raise ApiError(400, "n must be in 1..100")
        root = params.get("root") or None
        if root not in (None, "facts", "info"):
            raise ApiError(400, "root must be facts or info")
        as_of = params.get("as_of")
        if as_of and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", as_of):
            raise ApiError(400, "as_of must be YYYY-MM-DD")
        self._backend()
        self._embed()
        self.zombies.spawn()
        if self.search_s:
            time.sleep(self.search_s)  # the embedding + index round trip
        terms = set(re.findall(r"\w+", query.lower()))
        scored = []
        for leaf in self.leafs:
            if (root and leaf["root"] != root) or (as_of and leaf["valid_from"] > as_of):
                continue
            hits = len(terms.intersection(leaf["text"].split()))
            if hits:
                scored.append((round(hits / max(1, len(terms)), 4), leaf))
        sort = params.get("sort", "")
        if sort.startswith("date"):
            scored.sort(key=lambda s: s[1]["valid_from"], reverse=not sort.endswith(":asc"))
        else:
            scored.sort(key=lambda s: (-s[0], s[1]["id"]))
        with self.lock:
            self.searches += 1
            if self.pool_size:
                self.pinned_results += 1  # the result is never closed: its pages stay pinned
        results = [
            {
                "id": leaf["id"],
                "text": leaf["text"],
                "root": leaf["root"],
                "score": score,
                "source": leaf["source"],
                "valid_from": leaf["valid_from"],
            }
            for score, leaf in scored[:n]
        ]
        return {"query": query, "root_filter": root or "", "count": len(results), "results": results}

    def get(self, params: dict[str, str]) -> dict:
        leaf_id = params.get("id", "")
        if not leaf_id:
            raise ApiError(400, "missing required parameter id")
        self._backend()
        leaf = self.by_id.get(leaf_id)
        if leaf is None:
            raise ApiError(404, f"no leaf {leaf_id}")
        shown = {k: v for k, v in leaf.items() if k != "body"}
        if params.get("body") not in (None, "", "0", "false"):
            shown["body"] = leaf["body"]
        return shown

    def stats(self, _params=None) -> dict:
        self._backend()
        roots: dict[str, int] = {}
        for leaf in self.leafs:
            roots[leaf["root"]] = roots.get(leaf["root"], 0) + 1
        return {
            "leafs": len(self.leafs),
            "roots": roots,
            "index": "ok",
            "searches": self.searches,
            "pinned_results": self.pinned_results,
            "retained_bytes": len(self.retained) * self.leak_bytes,
            "model_loads": self.model_loads,
            "zombie_children": count_zombies(),
        }

    def audit(self, _params=None) -> dict:
        self._backend()
        buckets = {f"{b / 5:.1f}-{(b + 1) / 5:.1f}": 0 for b in range(5)}
        facts = [leaf for leaf in self.leafs if leaf["root"] == "facts"]
        for leaf in facts:
            b = min(4, int(leaf["confidence"] * 5))
            buckets[f"{b / 5:.1f}-{(b + 1) / 5:.1f}"] += 1
        return {"facts": len(facts), "confidence_histogram": buckets}

    def ingest(self, body: bytes) -> dict:
        if not body.strip():
            return {"hint": 'POST one leaf object, an array of them, or {"leafs": [...]}; CLI: brain ingest FILE'}
        try:
            doc = json.loads(body)
        except ValueError:
            raise ApiError(400, "body is not JSON") from None
        items = doc.get("leafs") if isinstance(doc, dict) and "leafs" in doc else doc
        items = items if isinstance(items, list) else [items]
        if not all(isinstance(i, dict) and isinstance(i.get("text"), str) and i["text"] for i in items):
            raise ApiError(400, "every leaf needs a non-empty text")
        self._backend()
        ids = []
        with self.lock:
            for item in items:
                leaf = {
                    "id": f"leaf-{len(self.leafs):04d}",
                    "root": item.get("root", "info"),
                    "text": item["text"],
                    "body": item["text"],
                    "source": item.get("source", "ingest"),
                    "valid_from": item.get("valid_from", time.strftime("%Y-%m-%d")),
                    "confidence": 1.0,
                }
                self.leafs.append(leaf)
                self.by_id[leaf["id"]] = leaf
                ids.append(leaf["id"])
        return {"ingested": len(ids), "ids": ids}

    def mcp(self, body: bytes) -> dict:
        """Stateless JSON-RPC: no session id, no SSE; notifications get 200 ``{}`` (as the real API does)."""
        try:
            msg = json.loads(body)
        except ValueError:
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request"}}
        if "id" not in msg:
            return {}
        method, params = msg["method"], msg.get("params") or {}
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        tools: dict[str, Callable[[dict[str, str]], dict]] = {
            "search": self.search,
            "get": self.get,
            "stats": self.stats,
            "audit": self.audit,
        }
        if method == "initialize":
            reply["result"] = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "brain-standin", "version": "0.1"},
            }
        elif method == "ping":
            reply["result"] = {}
        elif method == "tools/list":
            reply["result"] = {
                "tools": [
                    {"name": name, "description": f"brain {name}", "inputSchema": {"type": "object"}}
                    for name in (*tools, "ingest")
                ]
            }
        elif method == "tools/call" and params.get("name") in (*tools, "ingest"):
            args = params.get("arguments") or {}
            try:
                if params["name"] == "ingest":
                    out = self.ingest(json.dumps(args).encode())
                else:
                    out = tools[params["name"]]({k: str(v) for k, v in args.items()})
                reply["result"] = {"content": [{"type": "text", "text": json.dumps(out)}]}
            except ApiError as exc:
                reply["result"] = {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        elif method == "tools/call":
            reply["error"] = {"code": -32602, "message": f"unknown tool {params.get('name')!r}"}
        else:
            reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
        return reply
