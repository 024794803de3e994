"""swarmgauge: load tests for agent-era services on Locust, under one import namespace.

The code lives where it imports from: ``swarmgauge/users/`` is ``swarmgauge.users`` in a checkout, an editable
install and a wheel alike. The one exception is setuptools' own: the repository's top-level ``locustfiles/`` is
shipped as ``swarmgauge.locustfiles`` (``package-dir`` in ``pyproject.toml``); see ARCHITECTURE.md.
"""

from __future__ import annotations

__version__ = "0.2.0"
