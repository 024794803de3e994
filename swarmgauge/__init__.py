"""swarmgauge: load tests for agent-era services on Locust, under one import namespace.

The repository keeps its layout's top-level folders (``users/``, ``shapes/``, ``listeners/``, ``reports/``,
``protocols/``, ``targets/``, ``locustfiles/``); a wheel installs them as ``swarmgauge.users`` and so on
(``package-dir`` in ``pyproject.toml``). In a source checkout or an editable install the same names resolve to those
folders through :class:`_SourceTreeFinder`, so every way of running imports the same modules under the same names,
and a user's own ``users/`` or ``reports/`` folder never shadows ours.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path


def __getattr__(name: str) -> str:
    """``swarmgauge.__version__``: the installed distribution's version (written once, in ``pyproject.toml``).

    Read on first use, so a Locust worker importing the package does not pay for ``importlib.metadata``.
    """
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import metadata

    try:
        return metadata.version(__name__)
    except metadata.PackageNotFoundError:  # a source tree on sys.path that was never installed
        return "0+unknown"


#: The layout's folders that live at the repository's top level and are imported as ``swarmgauge.<name>``.
MAPPED_PACKAGES = ("protocols", "users", "shapes", "listeners", "reports", "targets", "locustfiles")


class _SourceTreeFinder(importlib.abc.MetaPathFinder):
    """Finds ``swarmgauge.<folder>`` in the repository root of a source checkout (not used by a wheel)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        prefix, _, name = fullname.partition(".")
        if prefix != __name__ or name not in MAPPED_PACKAGES:
            return None
        folder = self.root / name
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def _source_root() -> Path | None:
    """The repository root when this package runs from a checkout (its siblings are the mapped folders)."""
    root = Path(__file__).resolve().parent.parent
    installed_beside = (Path(__file__).resolve().parent / "users").is_dir()
    if installed_beside or not (root / "pyproject.toml").is_file():
        return None
    if all((root / name / "__init__.py").is_file() for name in MAPPED_PACKAGES):
        return root
    return None


_root = _source_root()
if _root is not None and not any(isinstance(f, _SourceTreeFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _SourceTreeFinder(_root))
