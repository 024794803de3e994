"""Read verbs sans-IO: conditional and versioned FETCH, hash access, directories, LIST paging, LOOKUP checks, read tokens."""

from __future__ import annotations

import pytest

from swarmgauge.protocols.mark import content_hash
from swarmgauge.targets.mark.auth import Token, TokenStore, compile_glob, hash_token, publish_token
from swarmgauge.targets.mark.handler import Handler
from swarmgauge.targets.mark.store import Store
from tests.targets.mark.test_writes import TOKEN, ask, clock


@pytest.fixture
def handler() -> Handler:
    h = Handler(Store(), TokenStore([publish_token(TOKEN)], clock), clock)
    for name in ("a", "b", "c"):
        ask(h, "PUBLISH", f"/docs/{name}.md", {"tags": name}, f"# {name.upper()}\n".encode())
    return h


def test_conditional_fetch(handler):
    first = ask(handler, "FETCH", "/docs/a.md")
    assert ask(handler, "FETCH", "/docs/a.md", {"if-none-match": first.metadata["etag"]}).status == "not-modified"
    assert ask(handler, "FETCH", "/docs/a.md", {"if-none-match": "nope"}).status == "ok"
    since = {"if-modified-since": "2026-01-01T00:00:00Z"}
    assert ask(handler, "FETCH", "/docs/a.md", since).status == "not-modified"
    assert ask(handler, "FETCH", "/docs/a.md", {"if-modified-since": "2025-12-31T23:59:59Z"}).status == "ok"


def test_fetch_by_hash_and_missing_version(handler):
    digest = content_hash(b"# A\n")
    assert ask(handler, "FETCH", "/" + digest).body == b"# A\n"
    assert ask(handler, "FETCH", "/sha256-" + "0" * 64).status == "not-found"
    assert ask(handler, "FETCH", "/docs/a.md/v9").status == "not-found"


def test_directory_fetch_is_a_listing_or_its_index(handler):
    listing = ask(handler, "FETCH", "/docs")
    assert listing.metadata["entries"] == "3" and b"- [a.md](a.md)" in listing.body
    ask(handler, "PUBLISH", "/docs/index.md", {}, b"# Index\n")
    assert ask(handler, "FETCH", "/docs").body == b"# Index\n"


def test_health(handler):
    answer = ask(handler, "FETCH", "/health")
    assert (answer.status, answer.body) == ("ok", b"# Health Check\n\nServer is healthy.\n")


def test_list_pages_with_the_real_cursor(handler):
    seen, cursor = [], None
    for _ in range(5):
        meta = {"page-size": "1", **({"cursor": cursor} if cursor else {})}
        page = ask(handler, "LIST", "/docs", meta)
        seen.append(page.body.split(b"- [")[1].split(b"]")[0])
        cursor = page.metadata.get("next-cursor")
        if page.metadata["complete"] == "true":
            break
    assert seen == [b"a.md", b"b.md", b"c.md"]


@pytest.mark.parametrize(
    "metadata",
    [
        {"page-size": "0"},
        {"page-size": "1001"},
        {"page-size": "x"},
        {"include-archived": "yes"},
        {"cursor": "!!!"},
        {"cursor": "AQAABS9ub3BlYS5tZA"},
    ],
)
def test_list_bad_arguments(handler, metadata):
    assert ask(handler, "LIST", "/docs", metadata).status == "bad-request"


def test_list_of_a_file_is_not_found(handler):
    assert ask(handler, "LIST", "/docs/a.md").status == "not-found"


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"query": "a"},
        {"query": " ".join(f"t{n}" for n in range(33))},
        {"query": "ab", "limit": "0"},
        {"query": "ab", "limit": "many"},
        {"query": "ab", "match": "fuzzy"},
        {"query": "ab", "filter": "nokey"},
    ],
)
def test_lookup_bad_arguments(handler, metadata):
    assert ask(handler, "LOOKUP", "/", metadata).status == "bad-request"


def test_lookup_match_all_limit_and_scope(handler):
    everything = ask(handler, "LOOKUP", "/", {"query": "*", "limit": "2"})
    assert everything.metadata["matches"] == "2"
    assert ask(handler, "LOOKUP", "/nowhere", {"query": "ab"}).status == "not-found"
    tagged = ask(handler, "LOOKUP", "/docs", {"query": "*", "filter": "tag=b"})
    assert tagged.metadata["matches"] == "1" and b"/docs/b.md" in tagged.body


def test_lookup_answers_from_each_documents_current_version(handler):
    """The catalog a LOOKUP reads is kept per version: a new version's title and tags are found, the old ones not."""
    ask(handler, "PUBLISH", "/docs/x.md", {"tags": "first"}, b"# Alpha\n")
    assert b"/docs/x.md" in ask(handler, "LOOKUP", "/", {"query": "alpha"}).body
    ask(handler, "PUBLISH", "/docs/x.md", {"tags": "zeta"}, b"# Omega\n")
    assert b"Omega" in ask(handler, "LOOKUP", "/", {"query": "omega"}).body
    assert b"/docs/x.md" in ask(handler, "LOOKUP", "/", {"query": "zeta"}).body
    assert b"/docs/x.md" not in ask(handler, "LOOKUP", "/", {"query": "alpha first"}).body


def test_read_tokens_guard_reads_and_hide_rows():
    reader = Token("reader", hash_token("read-token"), (compile_glob("/private/**"),), frozenset({"read"}))
    h = Handler(Store(), TokenStore([publish_token(TOKEN), reader], clock), clock)
    ask(h, "PUBLISH", "/private/p.md", {}, b"# Secret alpha\n")
    ask(h, "PUBLISH", "/public/q.md", {}, b"# Open alpha\n")
    assert ask(h, "FETCH", "/private/p.md").status == "unauthorized"
    assert ask(h, "FETCH", "/private/p.md", {"auth": "read-token"}).status == "ok"
    assert ask(h, "FETCH", "/public/q.md").status == "ok"
    hits = ask(h, "LOOKUP", "/", {"query": "alpha"})
    assert hits.metadata["matches"] == "1" and b"/public/q.md" in hits.body
