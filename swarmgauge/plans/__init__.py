"""The bundled load plans (``--plan NAME``, the demo's pages): YAML files shipped as package data.

Read through importlib.resources, so they are found wherever swarmgauge is installed (a clone, an editable install,
a wheel). Standard library only, so the demo reads them without importing Locust.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import PurePath


def names() -> list[str]:
    """The names ``--plan`` accepts without a path: the YAML files here, without ``.yaml``."""
    files = resources.files(__name__).iterdir()
    return sorted(entry.name.removesuffix(".yaml") for entry in files if entry.name.endswith(".yaml"))


def bundled(name: str) -> Traversable:
    """The bundled plan ``name`` (``demarkus-reads`` or ``demarkus-reads.yaml``); it may not exist (``is_file()``)."""
    return resources.files(__name__) / (name if PurePath(name).suffix else f"{name}.yaml")
