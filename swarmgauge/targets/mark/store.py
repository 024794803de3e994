"""Documents, their version chains and directories, in memory or mirrored to a directory of JSON files.

Each version keeps the exact stored-version bytes the Go server would write (``protocols.mark.stored_version_bytes``),
so etags, previous-hash links and VERSIONS' chain check equal the real server's.
"""

from __future__ import annotations

import json
import os
import posixpath
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from swarmgauge.errors import SwarmgaugeError
from swarmgauge.protocols.mark import content_hash, etag_of, split_tags, stored_version_bytes


class StoreError(SwarmgaugeError):
    """The directory store cannot be read or written."""


@dataclass(frozen=True)
class Version:
    number: int
    body: bytes
    metadata: dict[str, str]
    modified: datetime
    stored: bytes
    #: what LOOKUP reads of this version (title, tags, importance), filled on its first LOOKUP: the real server answers
    #: from an in-memory catalog, so re-reading 300 bodies a LOOKUP (1.7 ms of CPU) was the stand-in's cost, not the page's
    catalog: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def etag(self) -> str:
        return etag_of(self.stored)

    @property
    def content_hash(self) -> str:
        return content_hash(self.body)


@dataclass
class Document:
    path: str
    versions: list[Version] = field(default_factory=list)
    archived: bool = False

    @property
    def current(self) -> Version:
        return self.versions[-1]

    def version(self, number: int) -> Version | None:
        for version in self.versions:
            if version.number == number:
                return version
        return None

    def chain_valid(self) -> bool:
        """Every version's previous-hash names the sha256 of the one before it (pruned heads are allowed)."""
        for before, after in zip(self.versions, self.versions[1:]):
            rebuilt = stored_version_bytes(
                after.number, after.body, after.metadata, previous_hash=etag_of(before.stored)
            )
            if rebuilt != after.stored:
                return False
        return True


def normalize_metadata(metadata: dict[str, str]) -> dict[str, str]:
    """Publisher metadata as stored: tags trimmed and joined by ``,`` (``alpha, wire`` → ``alpha,wire``)."""
    result = dict(metadata)
    if "tags" in result:
        result["tags"] = ",".join(split_tags(result["tags"]))
    return result


class Store:
    """All documents of one world. ``directory`` (optional) persists every write atomically as JSON."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.documents: dict[str, Document] = {}
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            self._load()

    # --- reads -------------------------------------------------------------------------------------------------
    def get(self, path: str) -> Document | None:
        return self.documents.get(path)

    def is_dir(self, path: str) -> bool:
        if path == "/":
            return True
        prefix = path.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.documents)

    def by_hash(self, digest: str) -> Document | None:
        for doc in self.documents.values():
            if any(v.content_hash == digest for v in doc.versions):
                return doc
        return None

    def entries(self, dir_path: str, include_archived: bool) -> list[tuple[str, bool, str]]:
        """(name, is_dir, full path) of a directory's children, in byte order of name; hidden names omitted."""
        prefix = "/" if dir_path == "/" else dir_path + "/"
        found: dict[str, tuple[bool, str]] = {}
        for path, doc in self.documents.items():
            if not path.startswith(prefix) or (doc.archived and not include_archived):
                continue
            name, _, rest = path[len(prefix) :].partition("/")
            if not name or name.startswith("."):
                continue
            found.setdefault(name, (bool(rest), prefix + name))
            if rest:
                found[name] = (True, prefix + name)
        return sorted(((n, d, p) for n, (d, p) in found.items()), key=lambda e: e[0].encode("utf-8"))

    def live_documents(self) -> list[Document]:
        return [d for d in self.documents.values() if not d.archived]

    # --- writes ------------------------------------------------------------------------------------------------
    def add_version(
        self, path: str, body: bytes, metadata: dict[str, str], modified: datetime, *, retention: int | None = None
    ) -> Version:
        doc = self.documents.setdefault(path, Document(path))
        number = doc.current.number + 1 if doc.versions else 1
        previous = etag_of(doc.current.stored) if doc.versions else None
        metadata = normalize_metadata(metadata)
        stored = stored_version_bytes(number, body, metadata, previous_hash=previous)
        version = Version(number, body, metadata, modified, stored)
        doc.versions.append(version)
        if retention is not None and len(doc.versions) > retention:
            del doc.versions[:-retention]
        self._save(doc)
        return version

    def set_archived(self, doc: Document, archived: bool) -> bool:
        changed = doc.archived != archived
        doc.archived = archived
        if changed:
            self._save(doc)
        return changed

    # --- persistence -------------------------------------------------------------------------------------------
    def _file_for(self, path: str) -> Path:
        assert self.directory is not None
        return self.directory / (path.lstrip("/") + ".json")

    def _save(self, doc: Document) -> None:
        if self.directory is None:
            return
        target = self._file_for(doc.path)
        payload = {
            "path": doc.path,
            "archived": doc.archived,
            "versions": [
                {
                    "version": v.number,
                    "metadata": v.metadata,
                    "modified": v.modified.isoformat(),
                    "body": v.body.decode("utf-8"),
                    "previous_hash": _previous_hash(v.stored),
                }
                for v in doc.versions
            ],
        }
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(payload, handle, ensure_ascii=False, indent=1)
            os.replace(tmp, target)
        except OSError as exc:
            raise StoreError(f"cannot write {target}: {exc}") from exc

    def _load(self) -> None:
        assert self.directory is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        for file in sorted(self.directory.rglob("*.json")):
            try:
                payload = json.loads(file.read_text(encoding="utf-8"))
                doc = Document(payload["path"], archived=bool(payload["archived"]))
                for item in payload["versions"]:
                    body = item["body"].encode("utf-8")
                    stored = stored_version_bytes(
                        item["version"], body, item["metadata"], previous_hash=item.get("previous_hash")
                    )
                    modified = datetime.fromisoformat(item["modified"]).astimezone(UTC)
                    doc.versions.append(Version(item["version"], body, dict(item["metadata"]), modified, stored))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise StoreError(f"cannot read {file}: {exc}") from exc
            self.documents[doc.path] = doc


def _previous_hash(stored: bytes) -> str | None:
    """The previous-hash line of stored-version bytes, kept on disk so a pruned head keeps its etag."""
    head = stored[: stored.find(b"\n---\n", 3)].decode("utf-8")
    for line in head.splitlines():
        if line.startswith("previous-hash: "):
            return line[len("previous-hash: ") :]
    return None


def canonical_path(path: str) -> str:
    """Go's ``path.Clean``: ``/docs/`` → ``/docs``, ``//a/./b`` → ``/a/b``."""
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned != "/" else "/"


def contains_dot_dot(path: str) -> bool:
    return ".." in path.split("/")
