"""Filling a store before it serves: from a directory of ``.md`` files, or a deterministic generated corpus.

The generated corpus gives every load run the same documents (paths, tags, titles, importance, sizes), so two
runs of the same plan read the same bytes and LOOKUP has real rankings to compute.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from swarmgauge.errors import UsageError
from swarmgauge.protocols.mark import MarkParseError, parse_request
from swarmgauge.targets.mark.store import Store
from swarmgauge.targets.mark.writes import WriteRefused, publisher_metadata, with_default_type

TOPICS = (
    "quic",
    "latency",
    "capacity",
    "cache",
    "storage",
    "auth",
    "index",
    "search",
    "mcp",
    "runbook",
    "soak",
    "memory",
    "queue",
    "fleet",
    "gateway",
    "release",
)
KINDS = ("Note", "Decision", "Runbook", "Reference", "Log")
SECTIONS = ("Context", "Details", "Measurements", "Decision", "Follow-up")


@dataclass(frozen=True)
class SeedDocument:
    path: str
    metadata: dict[str, str]
    body: bytes


def corpus(count: int, seed: int = 6309) -> Iterator[SeedDocument]:
    """``count`` documents under ``/corpus/<topic>/doc-NNNN.md``, the same for the same ``seed``."""
    rng = random.Random(seed)
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        tags = sorted({topic, *rng.sample(TOPICS, 2)})
        title = f"{topic.capitalize()} note {n:04d}"
        paragraphs = [f"# {title}\n"]
        for section in rng.sample(SECTIONS, 3):
            words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(20, 120)))
            paragraphs.append(f"## {section}\n\n{words.capitalize()}.\n")
        metadata = {
            "tags": ", ".join(tags),
            "type": KINDS[n % len(KINDS)],
            "importance": f"{rng.randint(1, 99) / 100:.2f}",
        }
        yield SeedDocument(f"/corpus/{topic}/doc-{n:04d}.md", metadata, "\n".join(paragraphs).encode("utf-8"))


def corpus_paths(count: int, seed: int = 6309) -> list[str]:
    return [doc.path for doc in corpus(count, seed)]


def from_directory(directory: str | Path) -> Iterator[SeedDocument]:
    """Every ``*.md`` below ``directory``; a leading ``---`` block is read as publisher metadata."""
    root = Path(directory)
    if not root.is_dir():
        raise UsageError(f"--seed {directory}: not a directory")
    for file in sorted(root.rglob("*.md")):
        relative = file.relative_to(root).as_posix()
        raw = file.read_bytes()
        try:
            parsed = parse_request(b"PUBLISH /" + relative.encode("utf-8") + b"\n" + raw)
            metadata = publisher_metadata(parsed.metadata)
        except (MarkParseError, WriteRefused):
            raise UsageError(f"--seed: {file} has metadata the server would refuse") from None
        yield SeedDocument("/" + relative, metadata, parsed.body)


def seed_store(store: Store, documents: Iterator[SeedDocument], modified: datetime) -> int:
    """Add each document as version 1 unless the path already exists (a directory store keeps its history)."""
    added = 0
    for doc in documents:
        if store.get(doc.path) is not None:
            continue
        store.add_version(doc.path, doc.body, with_default_type(doc.path, doc.metadata), modified)
        added += 1
    return added
