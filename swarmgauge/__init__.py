"""swarmgauge: load tests for agent-era services on Locust, under one import namespace.

The code lives where it imports from: ``swarmgauge/users/`` is ``swarmgauge.users`` in a checkout, an editable
install and a wheel alike. The one exception is setuptools' own: the repository's top-level ``locustfiles/`` is
shipped as ``swarmgauge.locustfiles`` (``package-dir`` in ``pyproject.toml``); see ARCHITECTURE.md.
"""

from __future__ import annotations


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
