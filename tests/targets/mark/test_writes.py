"""PUBLISH / APPEND / ARCHIVE rules, sans-IO through the handler (no sockets: the rules, not the transport)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from swarmgauge.protocols.mark import encode_request, parse_response
from swarmgauge.targets.mark.auth import TokenStore, publish_token
from swarmgauge.targets.mark.handler import Handler
from swarmgauge.targets.mark.store import Store

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TOKEN = "t0ken"


def clock() -> datetime:
    return NOW


@pytest.fixture
def handler() -> Handler:
    return Handler(Store(), TokenStore([publish_token(TOKEN)], clock), clock)


def ask(handler: Handler, verb: str, path: str, metadata: dict | None = None, body: bytes = b"", *, auth=True):
    meta = dict(metadata or {})
    if auth and verb in ("PUBLISH", "APPEND", "ARCHIVE"):
        meta["auth"] = TOKEN
    return parse_response(handler.handle(encode_request(verb, path, meta, body)))


def test_publish_without_type_gets_document_except_index_and_log(handler):
    ask(handler, "PUBLISH", "/a.md", {}, b"# A\n")
    ask(handler, "PUBLISH", "/index.md", {}, b"# I\n")
    assert ask(handler, "FETCH", "/a.md").metadata["type"] == "Document"
    assert "type" not in ask(handler, "FETCH", "/index.md").metadata


def test_create_only_conflict_says_the_document_exists(handler):
    ask(handler, "PUBLISH", "/a.md", {"expected-version": "0"}, b"# A\n")
    answer = ask(handler, "PUBLISH", "/a.md", {"expected-version": "0"}, b"# B\n")
    assert answer.status == "conflict"
    assert answer.metadata == {"server-version": "1", "your-version": "0"}
    assert b"A document already exists at this path (version 1)." in answer.body


def test_identical_publish_makes_no_new_version(handler):
    ask(handler, "PUBLISH", "/a.md", {}, b"# A\n")
    again = ask(handler, "PUBLISH", "/a.md", {}, b"# A\n")
    assert (again.status, again.metadata["version"]) == ("ok", "1")


def test_archive_then_publish_refused_then_empty_body_unarchives(handler):
    ask(handler, "PUBLISH", "/a.md", {}, b"# A\n")
    assert ask(handler, "ARCHIVE", "/a.md").metadata == {"archived": "true", "version": "1"}
    assert ask(handler, "FETCH", "/a.md").status == "archived"
    refused = ask(handler, "PUBLISH", "/a.md", {}, b"# B\n")
    assert (refused.status, refused.body) == ("archived", b"\n# Archived\n\ndocument is archived; unarchive first\n")
    back = ask(handler, "PUBLISH", "/a.md", {}, b"")
    assert (back.status, back.metadata) == ("ok", {"version": "1"})
    assert ask(handler, "FETCH", "/a.md").status == "ok"


def test_list_hides_archived_unless_asked(handler):
    ask(handler, "PUBLISH", "/d/a.md", {}, b"# A\n")
    ask(handler, "PUBLISH", "/d/b.md", {}, b"# B\n")
    ask(handler, "ARCHIVE", "/d/b.md")
    assert ask(handler, "LIST", "/d").metadata["entries"] == "1"
    assert ask(handler, "LIST", "/d", {"include-archived": "true"}).metadata["entries"] == "2"


@pytest.mark.parametrize(
    "metadata, body, reason",
    [
        ({"Bad_Key": "x"}, b"# A\n", b"invalid metadata key"),
        ({"version": "9"}, b"# A\n", b"reserved metadata key"),
        ({"expected-version": "-1"}, b"# A\n", b"invalid expected-version"),
        ({"expected-version": "one"}, b"# A\n", b"invalid expected-version"),
        ({"retention": "0"}, b"# A\n", b"invalid retention"),
        ({"title": "x" * 1025}, b"# A\n", b"exceeds 1024 bytes"),
        ({f"k{n}": "v" for n in range(51)}, b"# A\n", b"too many metadata keys"),
        ({}, b"\xff\xfe", b"content must be UTF-8"),
    ],
)
def test_publisher_metadata_rules(handler, metadata, body, reason):
    answer = ask(handler, "PUBLISH", "/a.md", metadata, body)
    assert answer.status == "bad-request"
    assert reason in answer.body


def test_publish_needs_an_md_path_and_refuses_hash_paths(handler):
    assert ask(handler, "PUBLISH", "/a.txt", {}, b"x").status == "bad-request"
    assert ask(handler, "PUBLISH", "/sha256-" + "0" * 64, {}, b"x").status == "bad-request"


def test_retention_prunes_history_but_keeps_the_chain_valid(handler):
    for n in range(4):
        ask(handler, "PUBLISH", "/a.md", {"retention": "2"}, f"# v{n}\n".encode())
    versions = ask(handler, "VERSIONS", "/a.md")
    assert versions.metadata == {"chain-valid": "true", "current": "4", "total": "2"}
    assert ask(handler, "FETCH", "/a.md/v1").status == "not-found"


def test_append_rules(handler):
    ask(handler, "PUBLISH", "/a.md", {"tags": "x"}, b"# A\n")
    assert ask(handler, "APPEND", "/a.md", {}, b"more\n").status == "bad-request"
    assert ask(handler, "APPEND", "/a.md", {"expected-version": "0"}, b"more\n").status == "bad-request"
    assert ask(handler, "APPEND", "/a.md", {"expected-version": "1"}, b"").status == "bad-request"
    assert ask(handler, "APPEND", "/missing.md", {"expected-version": "1"}, b"x\n").status == "not-found"
    stale = ask(handler, "APPEND", "/a.md", {"expected-version": "5"}, b"x\n")
    assert stale.metadata == {"server-version": "1", "your-version": "5"}
    assert ask(handler, "APPEND", "/a.md", {"expected-version": "1"}, b"more\n").status == "created"
    fetched = ask(handler, "FETCH", "/a.md")
    assert (fetched.body, fetched.metadata["tags"], fetched.metadata["version"]) == (b"# A\nmore\n", "x", "2")


def test_read_only_server_refuses_writes(handler):
    read_only = Handler(Store(), TokenStore([publish_token(TOKEN)], clock), clock, read_only=True)
    assert ask(read_only, "PUBLISH", "/a.md", {}, b"# A\n").status == "not-permitted"
