"""LOOKUP: the catalog search (tags and titles) and the body search (sections, BM25) over current documents.

Catalog ranking follows mark.md §4 exactly (it is what lookup.golden pins). Body mode keeps the real server's
shape — one row per matching section, ``path#anchor``, ``Title › Heading`` and a snippet line, BM25 scaled by an
importance prior — with our own simpler tokenizer; only recall and the importance order are contractual there.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from swarmgauge.targets.mark.render import LookupRow
from swarmgauge.targets.mark.store import Document

MAX_TERMS = 32
SNIPPET_BYTES = 200
_WORD = re.compile(r"\w+")
_EDGE = re.compile(r"^\W+|\W+$")
_HEADING = re.compile(r"(#{1,6})[ \t]+(.*?)[ \t#]*\Z")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LIST_MARK = re.compile(r"(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


class LookupError_(ValueError):  # noqa: N801 - the builtin's name, kept apart
    """A LOOKUP argument the server answers with bad-request."""


@dataclass(frozen=True)
class Predicate:
    key: str
    value: str
    moment: datetime | None = None


def parse_filter(text: str) -> list[Predicate]:
    predicates = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or not key or not value:
            raise LookupError_(f"invalid filter {part!r}: want key=value")
        moment = None
        if key in ("modified-after", "modified-before"):
            try:
                moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise LookupError_(f"invalid filter {part!r}: want an RFC 3339 time") from None
        predicates.append(Predicate(key, value, moment))
    return predicates


def count_terms(query: str) -> int:
    return len({t.lower() for t in query.split()})


def title_of(doc: Document) -> str:
    """The ``title`` metadata, else the first ``# `` H1 outside code fences, else the path's base name."""
    version = doc.current
    if version.metadata.get("title"):
        return version.metadata["title"]
    fenced = False
    for line in version.body.decode("utf-8", "replace").splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith("# "):
            return line[2:].strip()
    return doc.path.rsplit("/", 1)[-1]


def importance_of(doc: Document) -> float:
    try:
        value = float(doc.current.metadata.get("importance", "0.5"))
    except ValueError:
        return 0.5
    return value if 0.0 <= value <= 1.0 and not math.isnan(value) else 0.5


def tags_of(doc: Document) -> list[str]:
    raw = doc.current.metadata.get("tags", "")
    return [t for t in raw.split(",") if t]


def _catalog_entry(doc: Document) -> dict:
    """The current version's title, tags and importance, worked out once per version (a version never changes)."""
    entry = doc.current.catalog
    if not entry:
        title, tags = title_of(doc), tags_of(doc)
        entry.update(
            title=title,
            tags=tags,
            ltitle=title.lower(),
            ltags={t.lower() for t in tags},
            importance=importance_of(doc),
        )
    return entry


def _matches(doc: Document, predicates: list[Predicate]) -> bool:
    for p in predicates:
        if p.key == "tag":
            if p.value.lower() not in (t.lower() for t in tags_of(doc)):
                return False
        elif p.key == "modified-after":
            if not doc.current.modified > cast(datetime, p.moment):  # parse_filter sets it for this key
                return False
        elif p.key == "modified-before":
            if not doc.current.modified < cast(datetime, p.moment):
                return False
        elif doc.current.metadata.get(p.key) != p.value:
            return False
    return True


def _under(path: str, scope: str) -> bool:
    return scope == "/" or path.startswith(scope.rstrip("/") + "/")


def lookup(
    documents: list[Document], query: str, scope: str, predicates: list[Predicate], body: bool
) -> list[LookupRow]:
    """Every matching row under ``scope``, best first (the caller drops unreadable rows, then applies the limit)."""
    docs = [d for d in documents if _under(d.path, scope) and _matches(d, predicates)]
    if body:
        return _lookup_body(docs, query)
    terms = list(dict.fromkeys(t.lower() for t in query.split()))
    scored = []
    for doc in docs:
        entry = _catalog_entry(doc)
        title, tags, lowered_tags, lowered_title = entry["title"], entry["tags"], entry["ltags"], entry["ltitle"]
        score = 0 if query == "*" else sum(1 for t in terms if t in lowered_tags or t in lowered_title)
        if query == "*" or score > 0:
            scored.append((score, entry["importance"], doc.current.modified, doc.path, title, tags))
    scored.sort(key=lambda r: (-r[0], -r[1], -r[2].timestamp(), r[3].encode("utf-8")))
    return [LookupRow(path, imp, title, tags) for _, imp, _, path, title, tags in scored]


# --- body mode -------------------------------------------------------------------------------------------------


def _tokens(text: str) -> list[str]:
    """Lower-case word runs of at least two characters, at most 32 bytes, plus each whole trimmed field."""
    out = []
    for fld in text.split():
        whole = _EDGE.sub("", fld.lower())
        runs = _WORD.findall(whole)
        if len(whole) >= 2 and len(whole.encode()) <= 32:
            out.append(whole)
        if len(runs) > 1 or (runs and runs[0] != whole):
            out.extend(r for r in runs if len(r) >= 2 and len(r.encode()) <= 32)
    return out


def _slug(heading: str) -> str:
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.strip().replace(" ", "-")


def _strip(line: str) -> str:
    line = line.strip()
    if line.startswith(">"):
        line = line.lstrip("> ")
    line = _LIST_MARK.sub("", line, count=1) if line[:1] in "-*+0123456789" else line
    line = _LINK.sub(r"\1", line)
    for mark in ("`", "*", "~~"):
        line = line.replace(mark, "")
    return " ".join(line.replace("|", " ").split())


@dataclass
class _Section:
    anchor: str
    heading: str
    text: str
    tokens: list[str]
    trail: set[str] = field(default_factory=set)


def _sections(body: str) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    trail: set[str] = set()
    lines: list[str] = []
    anchor, heading, fenced = "", "", False

    def close() -> None:
        text = "\n".join(s for s in (_strip(x) for x in lines) if s)
        if text or heading:
            sections.append(_Section(anchor, heading, text, _tokens(text), set(trail)))

    for line in body.splitlines():
        if line.strip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        close()
        level, heading = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        anchor, lines = _slug(heading), []
        trail = {tok for _, h in stack for tok in _tokens(h)}
    close()
    return sections


def _lookup_body(docs: list[Document], query: str) -> list[LookupRow]:
    terms = [t for t in dict.fromkeys(_EDGE.sub("", f.lower()) for f in query.split()) if len(t) >= 2]
    if not terms:
        return []
    candidates: list[tuple[Document, _Section | None, bool]] = []
    sec: _Section | None
    all_sections = 0
    total_length = 0
    df = [0] * len(terms)
    for doc in docs:
        title, tags = title_of(doc), tags_of(doc)
        doc_terms = set(_tokens(title)) | {tok for t in tags for tok in _tokens(t)}
        doc_match = all(t in doc_terms for t in terms)
        if doc_match:
            candidates.append((doc, None, True))
        for sec in _sections(doc.current.body.decode("utf-8", "replace")):
            all_sections += 1
            total_length += len(sec.tokens)
            own = set(sec.tokens)
            hits = 0
            matched = True
            for j, t in enumerate(terms):
                if t in own or t in sec.trail:
                    df[j] += 1
                    hits += 1
                elif t not in doc_terms:
                    matched = False
            if not doc_match and matched and hits:
                candidates.append((doc, sec, False))
    avg = total_length / all_sections if all_sections else 0.0
    idf = [math.log(1 + (all_sections - n + 0.5) / (n + 0.5)) for n in df]
    scored: list[tuple[float, Document, _Section | None]] = []
    for doc, sec, whole in candidates:
        score = 0.0
        doc_terms = set(_tokens(title_of(doc))) | {tok for t in tags_of(doc) for tok in _tokens(t)}
        for j, t in enumerate(terms):
            if sec is not None:
                tf = sec.tokens.count(t)
                if tf:
                    norm = 1 - 0.75 + 0.75 * len(sec.tokens) / max(avg, 1)
                    score += idf[j] * tf * 2.2 / (tf + 1.2 * norm)
                if t in sec.trail:
                    score += idf[j] * 1.5
            if t in doc_terms:
                score += idf[j] * 2.0
        scored.append((score * (2.0 if whole else 1.0), doc, sec))
    best = max((s[0] for s in scored), default=0.0)
    scored = [
        ((score / best if best > 0 else 1.0) * (0.3 + 0.7 * importance_of(doc)), doc, sec) for score, doc, sec in scored
    ]
    scored.sort(key=lambda s: (-s[0], s[1].path.encode("utf-8"), s[2].anchor if s[2] else ""))
    rows = []
    for _, doc, sec in scored:
        title = title_of(doc)
        if sec is None:
            rows.append(LookupRow(doc.path, importance_of(doc), title, tags_of(doc)))
            continue
        shown = f"{title} › {sec.heading}" if sec.heading else title
        rows.append(LookupRow(doc.path, importance_of(doc), shown, tags_of(doc), sec.anchor, _snippet(sec.text, terms)))
    return rows


def _snippet(text: str, terms: list[str]) -> str:
    best, best_hits = "", -1
    for line in text.split("\n"):
        hits = sum(1 for t in terms if t in line.lower())
        if hits > best_hits:
            best, best_hits = line, hits
    raw = best.encode("utf-8")
    if len(raw) <= SNIPPET_BYTES:
        return best
    return raw[: SNIPPET_BYTES - 3].decode("utf-8", "ignore") + "..."
