"""kneo-serv's fork parent: import kneo-serv once, then fork every ``kneo service serve`` process from this one.

Run by the kneo-serv venv's interpreter, by path (that venv has no swarmgauge): stdlib only. It is still the real
kneo-serv: each child runs the ``kneo`` console script's own ``app()`` with ``service serve --host H --port P``, so
the same code, the same ``uvicorn.run("kneo_serv.service.app:app", ...)`` and the same options; only the imports
happen once, before the fork (what gunicorn's ``--preload`` does). About 80 % of a process's boot was imports.

What is preloaded: the ``kneo`` CLI (``kneo_serv.cli.main``, which imports uvicorn and typer), the uvicorn modules
``uvicorn.run`` imports late, and every module the ``kneo_serv.service`` package's modules import from outside that
package. Not the package itself: its ``__init__`` imports ``kneo_serv.service.app``, whose last line builds the app
from the environment and the working folder (store DSN, limits, keys, ``.kneo/``) and starts a worker thread, so
it is imported in the child only, once its folder and environment are set. The parent checks it started no thread.
A child maps again the library pages its parent has mapped, so its RSS (the page's memory figure) reads as an exec'd
process's, not ~10 MiB under it.

The protocol is JSON lines: stdin takes ``{"spawn": key, "argv": [...], "cwd": ..., "env": {...}, "log": path}``;
stdout says ``{"ready": ...}`` (or ``{"error": ...}`` and exit 1) once preloaded, ``{"spawned": key, "pid": n}``
per fork and ``{"exited": pid, "code": c}`` per child reaped (``c`` as ``Popen.returncode``: -N for signal N).
End of stdin ends the parent. A child leads a session of its own and gets SIGTERM when this parent dies
(``PR_SET_PDEATHSIG``); the parent is started with the same signal tied to the process that launched it, so a
SIGKILLed Locust still ends every kneo-serv, one link at a time.

With ``--listen-fd N`` it is a template shared by many runs (``fork_template.py``, the demo's kneo page): N is a Unix
socket its launcher listens on, and it answers each connection with a fork parent of its own, forked from it once
imported, that speaks the protocol above on the connection (its end is the connection's) and dies with it.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import importlib
import importlib.util
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1
#: imported by ``uvicorn.run`` only once it runs (``Config.load``): loaded here so no child pays for them
UVICORN_LATE_MODULES = (
    "uvicorn.config",
    "uvicorn.server",
    "uvicorn.main",
    "uvicorn.loops.auto",
    "uvicorn.loops.asyncio",
    "uvicorn.loops.uvloop",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.protocols.websockets.websockets_impl",
    "uvicorn.protocols.websockets.wsproto_impl",
    "uvicorn.lifespan.on",
    "uvicorn.middleware.proxy_headers",
)
#: the package whose ``__init__`` builds the app from the environment: imported by the children only
SERVICE_PACKAGE = "kneo_serv.service"
PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT = 1 << 63  # a /proc/PID/pagemap entry's bit: the page is mapped in this process


def _write(message: dict[str, Any]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def _imports_of(package_dir: Path) -> list[str]:
    """Absolute imports of the package's modules that name modules outside the package."""
    names: set[str] = set()
    for path in sorted(package_dir.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
    return sorted(name for name in names if name != SERVICE_PACKAGE and not name.startswith(SERVICE_PACKAGE + "."))


def preload() -> int:
    """Import what every kneo-serv process imports, short of the app itself; the number of modules loaded."""
    importlib.import_module("kneo_serv.cli.main")
    for name in UVICORN_LATE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional implementation (uvloop, httptools, websockets) not installed
            pass
    spec = importlib.util.find_spec(SERVICE_PACKAGE)  # imports kneo_serv, not kneo_serv.service
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"no package {SERVICE_PACKAGE}")
    for name in _imports_of(Path(next(iter(spec.submodule_search_locations)))):
        importlib.import_module(name)
    if SERVICE_PACKAGE in sys.modules:
        raise RuntimeError(f"a preloaded module imported {SERVICE_PACKAGE}, which builds the app at import")
    if threading.active_count() != 1:
        raise RuntimeError(f"a preloaded module started a thread: {threading.enumerate()}")
    return len(sys.modules)


def resident_file_pages() -> list[tuple[int, int]]:
    """This process's readable file-backed pages mapped now, as (address, pages) runs.

    A forked child maps a library's pages lazily, only as it touches them again, so its RSS left out the ~10 MiB of
    library pages an exec'd kneo-serv keeps from its imports (RSS 63 against 74 MiB, anonymous memory the same): the
    child touches these pages once (:func:`map_pages`) and reads as an exec'd process does, as the page's did."""
    runs: list[tuple[int, int]] = []
    with open("/proc/self/maps", encoding="utf-8") as maps, open("/proc/self/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or not fields[5].startswith("/") or not fields[1].startswith("r"):
                continue
            start, end = (int(bound, 16) for bound in fields[0].split("-"))
            pagemap.seek(start // PAGE * 8)
            entries = pagemap.read((end - start) // PAGE * 8)
            first, count = 0, 0
            for number, (entry,) in enumerate(struct.iter_unpack("<Q", entries)):
                if entry & PRESENT:
                    if count == 0:
                        first = number
                    count += 1
                elif count:
                    runs.append((start + first * PAGE, count))
                    count = 0
            if count:
                runs.append((start + first * PAGE, count))
    return runs


def map_pages(runs: list[tuple[int, int]]) -> int:
    """Read one byte of every page of ``runs`` (mapping it in this process, as its parent has it); pages read."""
    for address, count in runs:
        for page in range(count):
            ctypes.string_at(address + page * PAGE, 1)
    return sum(count for _, count in runs)


def _reap(children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        _write({"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def serve() -> dict[str, Any] | None:
    """Fork a child per request until stdin ends: None in this parent then, the child's request in a child."""
    parent_pid = os.getpid()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a Python handler, so the wakeup fd hears of every exit
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, "requests")
    selector.register(wake_read, selectors.EVENT_READ, "children")
    children: set[int] = set()
    pending = b""
    while True:
        for key, _ in selector.select():
            if key.data == "children":
                while True:
                    try:
                        if not os.read(wake_read, 512):
                            break
                    except BlockingIOError:
                        break
                continue
            chunk = os.read(0, 65536)
            if not chunk:
                _reap(children)
                return None
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                request = json.loads(line)
                try:
                    pid = os.fork()
                except OSError as exc:
                    _write({"spawned": request["spawn"], "error": f"fork failed: {exc}"})
                    continue
                if pid == 0:
                    selector.close()
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    os.close(wake_read)
                    os.close(wake_write)
                    request["parent_pid"] = parent_pid
                    return request
                children.add(pid)
                _write({"spawned": request["spawn"], "pid": pid})
        _reap(children)


def _clone_per_connection(listener: socket.socket) -> bool:
    """Template mode: fork a fork parent per connection until stdin ends (False in the template then); True in a
    clone, whose stdin and stdout are now its connection and which dies with the template."""
    template_pid = os.getpid()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, "stdin")
    selector.register(listener, selectors.EVENT_READ, "listener")
    selector.register(wake_read, selectors.EVENT_READ, "children")
    while True:
        for key, _ in selector.select():
            if key.data == "stdin" and not os.read(0, 65536):
                return False
            if key.data == "children":
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_read, 512):
                        pass
                with contextlib.suppress(ChildProcessError):
                    while os.waitpid(-1, os.WNOHANG)[0]:
                        pass
            if key.data != "listener":
                continue
            connection, _ = listener.accept()
            if os.fork():
                connection.close()
                continue
            selector.close()
            listener.close()
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.close(wake_read)
            os.close(wake_write)
            os.dup2(connection.fileno(), 0)
            os.dup2(connection.fileno(), 1)
            connection.close()
            _die_with(template_pid)
            return True


def _die_with(parent_pid: int) -> None:
    """SIGTERM when the fork parent dies (as ``kneo service serve`` got when Locust died: one link further)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)


def _add_python_path(env: dict[str, str]) -> None:
    """What an interpreter started with this environment would have on ``sys.path``, and its ``sitecustomize``.

    The child's ``PYTHONPATH`` may name folders the parent's did not (the provider delay's ``sitecustomize``)."""
    added = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry and entry not in sys.path]
    sys.path[1:1] = added
    if any((Path(entry) / "sitecustomize.py").is_file() for entry in added):
        sys.modules.pop("sitecustomize", None)
        importlib.import_module("sitecustomize")


def become_service(request: dict[str, Any]) -> None:
    """Turn this forked child into ``kneo service serve`` as ``subprocess.Popen`` would have started it."""
    os.setsid()
    _die_with(request["parent_pid"])
    log_fd = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    os.close(null_fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    sys.path.insert(0, os.path.dirname(sys.argv[0]))  # the console script's folder, as its own start puts there
    _add_python_path(request["env"])


def _listening(argv: list[str]) -> socket.socket | None:
    """The template's listening socket (``--listen-fd N``), bound by its launcher: a run may connect at once."""
    if argv[:1] != ["--listen-fd"] or len(argv) != 2:
        return None
    return socket.socket(fileno=int(argv[1]))


def main() -> int:
    script_dir = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == script_dir:
        del sys.path[0]  # swarmgauge's target folder (venv.py, service.py) must not shadow anything
    listener = _listening(sys.argv[1:])
    started = time.monotonic()
    try:
        modules = preload()
    except BaseException as exc:  # noqa: BLE001 - any failure means: no fork parent, start processes one by one
        _write({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    try:
        resident = resident_file_pages()
    except OSError:  # no /proc/self/pagemap (not Linux): the children's RSS leaves out untouched library pages
        resident = []
    ready = {"ready": True, "modules": modules, "seconds": round(time.monotonic() - started, 3)}
    _write(ready)
    if listener is not None:
        if not _clone_per_connection(listener):
            os._exit(0)  # the clones get their death signal; the socket's folder is its launcher's to remove
        _write({**ready, "seconds": 0.0, "pid": os.getpid(), "shared": True})
    request = serve()
    if request is None:
        # nothing to flush (os.write only) and its children are stopped: skip the 0.17 s of tearing 900 modules down,
        # which the end of every kneo workload waited for
        os._exit(0)
    become_service(request)
    map_pages(resident)
    cli = importlib.import_module("kneo_serv.cli.main")
    return cli.app()  # the `kneo` console script's call: typer exits with the command's status


if __name__ == "__main__":
    sys.exit(main())
