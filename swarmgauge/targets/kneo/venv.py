"""Find a Python >= 3.12 and build the cached kneo-serv venv. Stdlib only: ``.ci/run`` runs it before installing.

kneo-serv 1.2.0 needs Python >= 3.12 while swarmgauge runs on 3.11, so the service gets its own venv, keyed by the
pinned versions and the interpreter's version so a change of either builds a new one. ``fastapi`` is pinned because
0.140.13+ removed a function kneo-serv 1.2.0 imports. A build is complete only when its marker file exists; a
half-built directory (killed mid-install) is removed and rebuilt. A file lock keeps two builders apart.
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

from swarmgauge.errors import SwarmgaugeError

KNEO_SERV_VERSION = "1.2.0"
FASTAPI_VERSION = "0.140.0"
REQUIREMENTS = (f"kneo-serv[postgres]=={KNEO_SERV_VERSION}", f"fastapi=={FASTAPI_VERSION}")
MIN_PYTHON = (3, 12)
_MARKER = ".swarmgauge-complete"


class NoSuitablePython(SwarmgaugeError):
    """No interpreter >= 3.12 was found; the message says where we looked."""


class VenvBuildError(SwarmgaugeError):
    """pip could not install kneo-serv into the venv."""


def _version_of(python: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:3])"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return None
    parts = out.stdout.split()
    if out.returncode != 0 or len(parts) != 3:
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def _pyenv_roots() -> list[str]:
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
    if shutil.which("pyenv"):
        try:
            roots.insert(
                0, subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=10).stdout.strip()
            )
        except (OSError, subprocess.SubprocessError):
            pass
    return [root for root in dict.fromkeys(roots) if root]


def candidates(explicit: str | None = None) -> list[str]:
    """Interpreters to try, in order: option, env, ``python3.1x`` on PATH, pyenv's versions (3.12 first: the one
    checked), then pyenv's shims. A shim is a shell script that asks pyenv which version it means; one not set for
    this directory fails after about 0.4 s, and two of them cost a kneo-serv start-up 0.8 s before a real
    interpreter was tried (each kneo test; the demo hands its workloads one), so they go after the versions they
    lead to."""
    found: list[str] = []
    if explicit:
        found.append(explicit)
    if os.environ.get("SWARMGAUGE_KNEO_PYTHON"):
        found.append(os.environ["SWARMGAUGE_KNEO_PYTHON"])
    roots = _pyenv_roots()
    shims = [os.path.join(root, "shims") for root in roots]
    on_path = [path for minor in (12, 13, 14) if (path := shutil.which(f"python3.{minor}"))]
    found += [path for path in on_path if os.path.dirname(path) not in shims]
    for root in roots:
        found += sorted(glob.glob(f"{root}/versions/3.1[2-9]*/bin/python3"))
    found += [path for path in on_path if os.path.dirname(path) in shims]
    return list(dict.fromkeys(found))


def find_python(explicit: str | None = None) -> tuple[str, tuple[int, int, int]]:
    """The first candidate that runs and is >= 3.12 (pyenv shims that fail are skipped); ``explicit`` or nothing."""
    tried = [explicit] if explicit else candidates()
    for python in tried:
        version = _version_of(python)
        if version is not None and version[:2] >= MIN_PYTHON:
            return python, version
    if explicit:
        raise NoSuitablePython(f"--python {explicit} is not a working Python >= 3.12")
    raise NoSuitablePython(
        "no Python >= 3.12: looked at $SWARMGAUGE_KNEO_PYTHON, python3.12/3.13/3.14 on PATH "
        "and $(pyenv root)/versions/3.1[2-9]*/bin/python3"
    )


def cache_root() -> Path:
    base = os.environ.get("SWARMGAUGE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "swarmgauge"
    )
    return Path(base)


def venv_dir(version: tuple[int, int, int]) -> Path:
    return cache_root() / f"kneo-serv-{KNEO_SERV_VERSION}-fastapi-{FASTAPI_VERSION}-py{'.'.join(map(str, version))}"


def ensure_venv(python: str | None = None, *, quiet: bool = True) -> Path:
    """The venv's interpreter path, building the venv first if it is missing or half-built."""
    interpreter, version = find_python(python)
    target = venv_dir(version)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        venv_python = target / "bin" / "python"
        if (target / _MARKER).exists() and venv_python.exists():
            return venv_python
        shutil.rmtree(target, ignore_errors=True)
        steps = [
            [interpreter, "-m", "venv", str(target)],
            [str(venv_python), "-m", "pip", "install", *(["-q"] if quiet else []), *REQUIREMENTS],
        ]
        for step in steps:
            result = subprocess.run(step, capture_output=quiet, text=True, timeout=900)
            if result.returncode != 0:
                shutil.rmtree(target, ignore_errors=True)
                tail = (result.stderr or "").strip().splitlines()[-5:] if quiet else []
                raise VenvBuildError(f"{' '.join(step[:4])} ... failed: {' | '.join(tail)}")
        (target / _MARKER).write_text(" ".join(REQUIREMENTS) + "\n")
        return venv_python


def prepare(argv: list[str]) -> int:
    """``python3 -m targets.kneo prepare [--python PATH]``: build the cached venv and print its interpreter."""
    python = argv[argv.index("--python") + 1] if "--python" in argv else None
    try:
        venv_python = ensure_venv(python, quiet="--verbose" not in argv)
    except NoSuitablePython as exc:
        print(f"kneo prepare: skipped: {exc}", file=sys.stderr)
        return 0
    except VenvBuildError as exc:
        print(f"kneo prepare: {exc}", file=sys.stderr)
        return 1
    print(f"kneo-serv venv ready: {venv_python}")
    return 0
