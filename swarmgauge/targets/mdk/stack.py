"""Launch, inspect, kill and restart the MDK stand-in's processes (mocks, Kernel, Workers, Gateway).

``MDKStack`` is what the CLI, the tests' fixtures, the locustfile and the drills use. Every component is a child
process started from ``<root>/stack.json`` (forked by ``swarmgauge target mdk``, ``forked.py``; else a fresh
interpreter); pids and logs live under the root, so ``MDKStack.attach(root)`` from another process (``swarmgauge
drill``) can kill and restart them by pid.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from swarmgauge.targets.mdk import forked, rpc
from swarmgauge.targets.mdk.common import HOST, READY_MARK, StackError, StackPlan, WorkerPlan, log_path, pid_path

STOP_GRACE_S = 2.0
START_ATTEMPTS = 3
#: how often a start looks for a component's READY line and asks the Kernel whether the Workers are routable
READY_POLL_S = 0.005
ROUTABLE_POLL_S = 0.01


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def make_plan(devices: int = 20, workers: int = 1, gateway_port: int = 0, **knobs) -> StackPlan:
    """A device plan with UUIDv4 device ids (as MDK provisioning makes) split evenly over the Workers."""
    if devices < 1 or workers < 1 or workers > devices:
        raise StackError(f"need 1 <= workers <= devices, got {workers} workers for {devices} devices")
    ids = [str(uuid.uuid4()) for _ in range(devices)]
    plans = [
        WorkerPlan(id=f"worker-{i}", port=free_port(), mock_port=free_port(), devices=ids[i::workers])
        for i in range(workers)
    ]
    return StackPlan(gateway_port=gateway_port or free_port(), kernel_port=free_port(), workers=plans, **knobs)


#: How long a component may take to say READY: a healthy start returns as soon as it does; on a loaded 2-core machine
#: (a CI run's test workers beside it) the Workers' processes took past 20 s to start.
START_TIMEOUT_S = 60.0


class MDKStack:
    """A running stand-in stack; use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(
        self,
        root: Path | str | None = None,
        plan: StackPlan | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
        fork: bool = False,
        **plan_args,
    ) -> None:
        """``fork``: ``start()`` forks the components from this process (``forked.py``; a single-threaded one with no
        event loop only, as ``swarmgauge target mdk``); otherwise each is a fresh interpreter, as a restart always."""
        self._own_root = root is None
        self.fork = fork
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="swarmgauge-mdk-"))
        self.start_timeout_s = start_timeout_s
        loaded = plan is None and (self.root / "stack.json").exists() and not plan_args
        self._plan_args = None if plan is not None or loaded else plan_args
        self.plan = plan or (StackPlan.load(self.root) if loaded else make_plan(**plan_args))
        self._children: list[subprocess.Popen | forked.ForkedChild] = []
        self._spawned: dict[str, subprocess.Popen | forked.ForkedChild] = {}

    @classmethod
    def attach(cls, root: Path | str) -> MDKStack:
        """A handle on a stack another process started (for drills)."""
        return cls(root=root, plan=StackPlan.load(Path(root)))

    @property
    def url(self) -> str:
        return f"http://{self.plan.host}:{self.plan.gateway_port}"

    @property
    def components(self) -> list[str]:
        return ["mocks", "kernel", *(w.id for w in self.plan.workers), "gateway"]

    @property
    def start_stages(self) -> list[list[str]]:
        """The components started side by side, stage after stage. Fresh interpreters: the mocks, the Kernel (it
        finds the Workers by their key files, whenever they come) and the Gateway (it asks the Kernel per request)
        together, then the Workers, which read the mocks' devices from their start. One after the other, each
        interpreter's start-up added to the stand-in's (8 of them at 5 Workers). Forked, a component is up in
        milliseconds, and the Kernel's key-file scan (every ``scan_s``, 0.25 s) was most of the start: the Kernel
        comes last, and its first scan finds every Worker."""
        workers = [w.id for w in self.plan.workers]
        if self.fork:
            return [["mocks", "gateway"], workers, ["kernel"]]
        return [["mocks", "kernel", "gateway"], workers]

    def device_ids(self, worker_id: str | None = None) -> list[str]:
        return [d for w in self.plan.workers if worker_id in (None, w.id) for d in w.devices]

    def start(self) -> MDKStack:
        """Start every component, stage by stage; free ports are picked again when another process took one
        meanwhile."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.fork:
            forked.preload()
        for attempt in range(START_ATTEMPTS):
            (self.root / "owner.pid").write_text(str(os.getpid()))
            self.plan.save(self.root)
            try:
                for stage in self.start_stages:
                    offsets = {component: self._start_component(component) for component in stage}
                    for component, offset in offsets.items():
                        self.wait_ready(component, offset, self.start_timeout_s)
                self.wait_workers_ready(self.start_timeout_s)
                return self
            except StackError as exc:
                self._stop_components()
                if self._plan_args is None or "in use" not in str(exc) or attempt + 1 == START_ATTEMPTS:
                    self.stop()
                    raise
                for key in (self.root / "workers").glob("*.json"):  # the stopped attempt's Workers' addresses
                    key.unlink(missing_ok=True)
                self.plan = make_plan(**self._plan_args)
            except BaseException:
                self.stop()
                raise
        return self

    def _start_component(self, component: str) -> int:
        """A first start's component: forked or spawned (``fork``); returns the log offset of its READY line."""
        if not self.fork:
            return self.spawn(component)
        path = log_path(self.root, component)
        path.parent.mkdir(parents=True, exist_ok=True)
        offset = path.stat().st_size if path.exists() else 0
        child = forked.fork_component(component, self.root, path)
        self._children.append(child)
        self._spawned[component] = child
        return offset

    def spawn(self, component: str, boot_s: float = 0.0) -> int:
        """Start ``component``, which first waits ``boot_s`` (a restart's modelled boot); returns the log offset its
        READY line will follow."""
        path = log_path(self.root, component)
        path.parent.mkdir(parents=True, exist_ok=True)
        offset = path.stat().st_size if path.exists() else 0
        with open(path, "ab") as log:
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "swarmgauge.targets.mdk.process",
                    component,
                    "--root",
                    str(self.root),
                    "--boot-s",
                    f"{max(0.0, boot_s):g}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._children.append(child)
        self._spawned[component] = child
        return offset

    def ready_seen(self, component: str, offset: int) -> bool:
        path = log_path(self.root, component)
        try:
            with open(path, "rb") as log:
                log.seek(offset)
                return f"{READY_MARK} {component}".encode() in log.read()
        except OSError:
            return False

    def wait_ready(self, component: str, offset: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        child = self._spawned.get(component)
        while not self.ready_seen(component, offset):
            exited = child is not None and child.poll() is not None
            if exited or time.monotonic() > deadline:
                tail = log_path(self.root, component).read_text(errors="replace")[offset:][-2000:]
                why = (
                    f"exited with status {child.returncode}"
                    if exited and child is not None
                    else f"not ready within {timeout_s:.0f} s"
                )
                raise StackError(f"stand-in {component} {why}; log tail:\n{tail}")
            time.sleep(READY_POLL_S)

    def listed_device_ids(self, timeout_s: float = 2.0) -> list[str]:
        """The device ids the Kernel lists (``listWorkers``), in its order: the list a fleet summary then reads device
        by device."""
        workers = rpc.call_blocking(self.plan.host, self.plan.kernel_port, "listWorkers", timeout=timeout_s)
        return [device for worker in workers or [] for device in worker.get("deviceIds", [])]

    def kernel_status(self, timeout_s: float = 2.0) -> dict:
        return rpc.call_blocking(self.plan.host, self.plan.kernel_port, "getStatus", timeout=timeout_s)

    def wait_workers_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        expected = {w.id: len(w.devices) for w in self.plan.workers}
        while True:
            try:
                status = self.kernel_status()
                ready = {w["workerId"]: w["devices"] for w in status["workers"] if w["routable"]}
                if all(ready.get(k) == n for k, n in expected.items()):
                    return
            except rpc.RpcError:
                pass
            if time.monotonic() > deadline:
                raise StackError(f"stand-in Workers not READY within {timeout_s:.0f} s")
            time.sleep(ROUTABLE_POLL_S)

    def pid(self, component: str) -> int | None:
        try:
            return int(pid_path(self.root, component).read_text())
        except (OSError, ValueError):
            return None

    def kill(self, component: str, sig: int = signal.SIGKILL) -> float:
        """Signal the component by its pid; returns the ``time.monotonic()`` of the kill."""
        pid = self.pid(component)
        if pid is None:
            raise StackError(f"no pid recorded for stand-in {component}")
        killed_at = time.monotonic()
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        if sig in (signal.SIGKILL, signal.SIGTERM):
            pid_path(self.root, component).unlink(missing_ok=True)
            self._reap()
        return killed_at

    def restart(self, component: str, timeout_s: float = 20.0) -> None:
        self.wait_ready(component, self.spawn(component), timeout_s)

    def _reap(self) -> None:
        for child in self._children:
            child.poll()

    def stop(self) -> None:
        self._stop_components()
        (self.root / "owner.pid").unlink(missing_ok=True)
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def _stop_components(self) -> None:
        for component in reversed(self.components):
            pid = self.pid(component)
            if pid is not None:
                for sig in (signal.SIGCONT, signal.SIGTERM):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        break
        deadline = time.monotonic() + STOP_GRACE_S
        for child in self._children:
            try:
                child.wait(max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(1.0)
        for component in self.components:
            pid_path(self.root, component).unlink(missing_ok=True)
        self._children = [child for child in self._children if child.poll() is None]

    def __enter__(self) -> MDKStack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
