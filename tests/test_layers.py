"""The layer table of ARCHITECTURE.md, checked on every import in the source tree (ast, no import runs), and the
rule that no module reads another's private names.

A lower layer that imports an upper one fails here by file, line and rule, so a cycle cannot be hidden again by an
import inside a function or an ``except ImportError`` guard around our own modules. A private name (``x._name``
where ``x`` is not ``self``, ``cls`` or ``super()``; ``from m import _name``) of another module fails too, except a
dependency's private name used by a patch of ``swarmgauge.patches`` in the module the patch names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmgauge.patches import DOCUMENTED_PRIVATE_NAMES, PATCHES, allowed_private_names

ROOT = Path(__file__).resolve().parent.parent
#: The layers that are a sub-package of swarmgauge (``swarmgauge/<layer>/``).
LAYER_PACKAGES = ("protocols", "quic", "users", "shapes", "listeners", "reports", "targets")
#: The scenarios: the repository's top-level ``locustfiles/``, shipped as ``swarmgauge.locustfiles``.
SCENARIOS = "locustfiles"
CORE_MODULES = (
    "swarmgauge.core",
    "swarmgauge.patches",
    "swarmgauge.errors",
    "swarmgauge.files",
    "swarmgauge.run_folders",
    "swarmgauge.redaction",
    "swarmgauge.plans",
)

#: The sans-IO half of ``swarmgauge/quic/``, the engine adapter (aioquic or qh3), its qh3 seams and the ACK timing:
#: below the users and the targets, which both run QUIC on it. The rest of ``swarmgauge/quic/`` (the gevent driver)
#: is the ``quic`` layer, below the users only.
ENGINE_MODULES = (
    "swarmgauge.quic.engine",
    "swarmgauge.quic.engine_base",
    "swarmgauge.quic.qh3_patches",
    "swarmgauge.quic.qh3_post_handshake",
    "swarmgauge.quic.acks",
)

#: layer -> the project layers it may import (besides itself). The top (``app``) may import everything.
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    "engines": {"core"},
    "quic": {"core", "engines"},
    "protocols": {"core"},
    "users": {"core", "protocols", "engines", "quic"},
    "shapes": {"core"},
    "listeners": {"core"},
    "reports": {"core"},
    "targets": {"core", "protocols", "engines"},
    "locustfiles": {
        "core",
        "engines",
        "quic",
        "protocols",
        "users",
        "shapes",
        "listeners",
        "reports",
        "targets",
        "app",
    },
    "app": {
        "core",
        "engines",
        "quic",
        "protocols",
        "users",
        "shapes",
        "listeners",
        "reports",
        "targets",
        "locustfiles",
    },
}
#: layer -> third-party top-level packages it must not import.
MUST_NOT_IMPORT: dict[str, set[str]] = {
    "engines": {"locust", "gevent", "pandas"},
    "quic": {"locust", "pandas"},
    "core": {"aioquic", "pandas", "matplotlib", "plotly"},
    "protocols": {"aioquic", "gevent", "locust"},
    "shapes": {"aioquic", "pandas"},
    "listeners": {"aioquic", "pandas", "matplotlib", "plotly"},
    "reports": {"locust", "aioquic", "gevent"},
    "targets": {"locust"},
}
#: Known violations, each owned elsewhere and listed in ARCHITECTURE.md; (file, imported module prefix).
KNOWN: set[tuple[str, str]] = {
    (
        "swarmgauge/users/kneo_ledger.py",
        "swarmgauge.targets.kneo.store",
    ),  # reading kneo's store belongs in a store package
    ("swarmgauge/users/kneo_ledger.py", "swarmgauge.targets.postgres"),
    ("swarmgauge/users/kneo_ledger.py", "swarmgauge.targets.kneo.drain"),
    ("swarmgauge/targets/embedded.py", "locust"),  # starting an embedded target from a locustfile's init event
    ("swarmgauge/targets/mark/embedded.py", "locust"),
}


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.imported}: {self.rule}"


def layer_of_module(name: str) -> str | None:
    """The layer of an importable name, or None for a third-party or standard-library module."""
    parts = name.split(".")
    if parts[0] != "swarmgauge":
        return None
    if any(name == core or name.startswith(core + ".") for core in CORE_MODULES):
        return "core"
    if name in ENGINE_MODULES:
        return "engines"
    if len(parts) > 1 and parts[1] in (*LAYER_PACKAGES, SCENARIOS):
        return parts[1]
    return "app"


def layer_of_file(relative: Path) -> str:
    return layer_of_module(module_of_file(relative)) or "app"


def module_of_file(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts if parts[0] == "swarmgauge" else ["swarmgauge", *parts])


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every module an import statement names, relative imports resolved; ``from pkg import mod`` as ``pkg.mod``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                found.append((node.lineno, f"{base}.{alias.name}" if base.count(".") < 1 else base))
    return found


def guarded_project_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Imports of our own modules inside ``try`` blocks that catch ImportError: a missing module must fail."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        catches = " ".join(ast.unparse(h.type) for h in node.handlers if h.type is not None)
        if "ImportError" not in catches and "ModuleNotFoundError" not in catches:
            continue
        for statement in node.body:
            for sub in ast.walk(statement):
                if isinstance(sub, ast.ImportFrom) and (sub.level or (sub.module or "").startswith("swarmgauge")):
                    found.append((sub.lineno, sub.module or "."))
                if isinstance(sub, ast.Import):
                    found.extend((sub.lineno, a.name) for a in sub.names if a.name.startswith("swarmgauge"))
    return found


def source_files(root: Path = ROOT) -> list[Path]:
    files = [p for folder in (SCENARIOS, "swarmgauge") for p in sorted((root / folder).rglob("*.py"))]
    return [p for p in files if ".venv" not in p.parts]


def violations(root: Path = ROOT) -> list[Violation]:
    found: list[Violation] = []
    for path in source_files(root):
        relative = path.relative_to(root)
        layer = layer_of_file(relative)
        tree = ast.parse(path.read_text(), filename=str(relative))
        module = module_of_file(relative)
        for line, name in imported_names(tree, module, path.name == "__init__.py"):
            if any(str(relative) == known_path and name.startswith(prefix) for known_path, prefix in KNOWN):
                continue
            target = layer_of_module(name)
            if target is None:
                if name.split(".")[0] in MUST_NOT_IMPORT.get(layer, set()):
                    found.append(Violation(str(relative), line, name, f"{layer} must not import {name.split('.')[0]}"))
            elif target != layer and target not in MAY_IMPORT[layer]:
                found.append(Violation(str(relative), line, name, f"{layer} may not import {target}"))
        for line, name in guarded_project_imports(tree):
            found.append(Violation(str(relative), line, name, "our own module behind an ImportError guard"))
    return found


def _is_private(name: str) -> bool:
    """``_name``: not a dunder (``__init__``), not an enum's sunder (``_value_``)."""
    return name.startswith("_") and not name.endswith("_")


def private_reads(tree: ast.AST, module: str) -> list[tuple[int, str, str]]:
    """(line, name, expression) of every private name read from another object or module."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            found.append((node.lineno, node.attr, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom) and node.module != module:
            found.extend(
                (node.lineno, a.name, f"from {node.module} import {a.name}") for a in node.names if _is_private(a.name)
            )
    return found


def private_name_violations(root: Path = ROOT) -> list[str]:
    allowed = allowed_private_names()
    found: list[str] = []
    for path in source_files(root):
        relative = path.relative_to(root)
        module = module_of_file(relative)
        for line, name, expression in private_reads(ast.parse(path.read_text()), module):
            if name in allowed.get(module, set()) or name in DOCUMENTED_PRIVATE_NAMES:
                continue
            found.append(f"{relative}:{line}: reads {expression}: another module's private name")
    return found


def test_no_module_reads_another_modules_private_names():
    """Public methods instead; a dependency's private name only where a registered patch says it is used."""
    assert private_name_violations() == []


def test_every_private_name_a_patch_lists_is_used_where_it_says():
    """A patch's private name no longer used in any of its modules is stale: remove it (or the patch)."""
    used: dict[str, set[str]] = {}
    for path in source_files():
        relative = path.relative_to(ROOT)
        module = module_of_file(relative)
        used.setdefault(module, set()).update(n for _l, n, _e in private_reads(ast.parse(path.read_text()), module))
    stale = {
        (patch.name, name)
        for patch in PATCHES
        for name in patch.private_names
        if not any(name in used.get(module, set()) for module in patch.where)
    }
    assert stale == set()


@pytest.mark.parametrize(
    ("text", "reported"),
    [
        ("def f(shape):\n    shape._plan = None\n", True),
        ("from swarmgauge.listeners.rundir import _secret\n", True),
        ("class A:\n    def f(self):\n        return self._x, super()._y(), type(self).__name__\n", False),
        ("import os\nos._exit(0)\n", False),
        ("from enum import Enum\nclass E(Enum):\n    A = 1\nE._value2member_map_\n", False),
    ],
)
def test_a_planted_private_read_is_reported(tmp_path: Path, text: str, reported: bool):
    found = private_name_violations(_tree(tmp_path, {"swarmgauge/listeners/bad.py": text}))
    assert (len(found) == 1 and found[0].startswith("swarmgauge/listeners/bad.py")) if reported else found == []


def test_every_import_follows_the_layer_table():
    assert [str(v) for v in violations()] == []


def test_the_known_violations_still_exist():
    """An entry of KNOWN that no longer matches anything is stale: remove it, so it cannot hide a new violation."""
    used = set()
    for path in source_files():
        relative = path.relative_to(ROOT)
        tree = ast.parse(path.read_text())
        for _line, name in imported_names(tree, module_of_file(relative), path.name == "__init__.py"):
            used.update((p, pre) for p, pre in KNOWN if str(relative) == p and name.startswith(pre))
    assert KNOWN - used == set()


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("path", "text", "rule"),
    [
        ("swarmgauge/users/bad.py", "from swarmgauge.listeners import steps\n", "users may not import listeners"),
        (
            "swarmgauge/users/bad.py",
            "def f():\n    from swarmgauge.targets import launch\n",
            "users may not import targets",
        ),
        (
            "swarmgauge/reports/bad.py",
            "from swarmgauge.listeners.rundir import run_dir\n",
            "reports may not import listeners",
        ),
        ("swarmgauge/listeners/bad.py", "import swarmgauge.reports.report\n", "listeners may not import reports"),
        ("swarmgauge/shapes/bad.py", "from swarmgauge import users\n", "shapes may not import users"),
        (
            "swarmgauge/protocols/bad.py",
            "from aioquic.quic.connection import QuicConnection\n",
            "protocols must not import aioquic",
        ),
        ("swarmgauge/core/bad.py", "from swarmgauge.listeners import steps\n", "core may not import listeners"),
        ("swarmgauge/listeners/sources/bad.py", "from ..steps import count\n", None),
        (
            "swarmgauge/listeners/bad.py",
            "try:\n    from swarmgauge.listeners import webui\nexcept ImportError:\n    pass\n",
            "ImportError guard",
        ),
    ],
)
def test_a_planted_import_is_reported(tmp_path: Path, path: str, text: str, rule: str | None):
    found = [str(v) for v in violations(_tree(tmp_path, {path: text}))]
    if rule is None:
        assert found == []
    else:
        assert len(found) == 1 and rule in found[0] and found[0].startswith(path)
