"""Seeding: a directory of .md files and the deterministic generated corpus."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.targets.mark import seed
from swarmgauge.targets.mark.store import Store

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_corpus_is_deterministic_and_varied():
    first, again = list(seed.corpus(50)), list(seed.corpus(50))
    assert first == again
    assert len({d.path for d in first}) == 50
    assert len({d.metadata["type"] for d in first}) > 1
    assert all(d.body.startswith(b"# ") for d in first)
    assert list(seed.corpus(5, seed=1)) != list(seed.corpus(5, seed=2))


def test_seed_directory_reads_frontmatter(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("---\ntags: x, y\n---\n# A\n")
    (tmp_path / "b.md").write_text("# B\n")
    store = Store()
    assert seed.seed_store(store, seed.from_directory(tmp_path), NOW) == 2
    assert store.get("/notes/a.md").current.metadata == {"tags": "x,y", "type": "Document"}
    assert store.get("/b.md").current.body == b"# B\n"
    assert seed.seed_store(store, seed.from_directory(tmp_path), NOW) == 0


def test_seed_directory_with_bad_metadata_is_a_usage_error(tmp_path):
    (tmp_path / "a.md").write_text('---\nversion: "3"\n---\n# A\n')
    with pytest.raises(UsageError, match=r"a\.md"):
        list(seed.from_directory(tmp_path))


def test_missing_seed_directory(tmp_path):
    with pytest.raises(UsageError, match="not a directory"):
        list(seed.from_directory(tmp_path / "nope"))


def test_directory_store_survives_a_restart(tmp_path):
    store = Store(tmp_path / "store")
    seed.seed_store(store, seed.corpus(3), NOW)
    reopened = Store(tmp_path / "store")
    assert {d.path: d.current.etag for d in reopened.documents.values()} == {
        d.path: d.current.etag for d in store.documents.values()
    }
