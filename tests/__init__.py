"""The test suite. ``REPO_ROOT``: the clone the tests run from (shipped code never builds paths from it)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
