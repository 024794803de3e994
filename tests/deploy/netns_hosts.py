"""Several "hosts" on one machine: network namespaces joined by veth links to a bridge, as the multi-host tests need.

``HostNetwork(["master", "worker-b", ...])`` makes, for this test session only (names carry the pid and a counter):

- a *switch* namespace holding a bridge ``br0``;
- one namespace per host, with ``lo`` up and ``eth0``, one end of a veth pair whose other end (``p-<index>``) is a
  port of the bridge, addressed ``10.231.0.<index+1>/24``.

Nothing is made in the machine's own namespace: the bridge, the links and the addresses live only in namespaces the
network made, so they cannot clash with the machine's addresses, and load sent to them reaches nothing else.
``cut(host)`` / ``restore(host)`` take the host's bridge port down and up (a pulled and replugged cable: both ends
lose carrier). ``start(host, argv)`` runs a command inside a host (``ip netns exec``); the network kills what it
started and deletes every namespace it made on exit, even after a failure, each ``ip`` call bounded in time.
:func:`unavailable_reason` says why namespaces cannot be made here (not root, no ``ip``, no CAP_NET_ADMIN).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from swarmgauge.targets.launch import child_env, stop_processes
from tests import REPO_ROOT

IP = shutil.which("ip") or "/usr/sbin/ip"
IP_TIMEOUT_S = 10.0
SUBNET = "10.231.0"
PREFIX = 24
REQUIRE_ENV = "SWARMGAUGE_REQUIRE_NETNS"
_networks = itertools.count()


class NetnsError(RuntimeError):
    """An ``ip`` command failed; the message is its command line and stderr."""


def ip(*args: str, timeout: float = IP_TIMEOUT_S) -> str:
    """Run ``ip ARGS`` bounded in time; its stdout, or NetnsError with the command and its stderr."""
    try:
        done = subprocess.run([IP, *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetnsError(f"ip {' '.join(args)}: {exc}") from None
    if done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {done.stderr.strip() or f'exit {done.returncode}'}")
    return done.stdout


def unavailable_reason() -> str | None:
    """Why this process cannot make network namespaces, or None when it can (tried with a throwaway one)."""
    if not Path(IP).exists():
        return f"no iproute2 here ({IP} missing; Debian: apt-get install iproute2)"
    if os.geteuid() != 0:
        return f"network namespaces need root (or CAP_NET_ADMIN and CAP_SYS_ADMIN); this is uid {os.geteuid()}"
    probe = f"sgprobe{os.getpid()}"
    try:
        ip("netns", "add", probe)
    except NetnsError as exc:
        return f"cannot make a network namespace: {exc}"
    try:
        ip("netns", "del", probe)
    except NetnsError:
        pass
    return None


@dataclass
class Host:
    """One namespace with its own address; ``port`` is its bridge port's name in the switch namespace."""

    name: str
    netns: str
    address: str
    port: str

    def command(self, argv: list[str]) -> list[str]:
        return [IP, "netns", "exec", self.netns, *argv]


@dataclass
class HostNetwork:
    """The switch and hosts for ``names``; a context manager that always tears down what it made."""

    names: list[str]
    hosts: dict[str, Host] = field(default_factory=dict)
    processes: list[subprocess.Popen] = field(default_factory=list)
    made: list[str] = field(default_factory=list)
    logs: list[IO[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        tag = f"sgnet{os.getpid()}n{next(_networks)}"
        self.switch = f"{tag}-switch"
        for index, name in enumerate(self.names):
            self.hosts[name] = Host(name, f"{tag}-{name}", f"{SUBNET}.{index + 1}", f"p-{index}")

    def __enter__(self) -> HostNetwork:
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, exc_type: Any, *_exc: Any) -> None:
        errors = self.teardown()
        if errors and exc_type is None:
            raise NetnsError("; ".join(errors))

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def _add_namespace(self, name: str) -> None:
        ip("netns", "add", name)
        self.made.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    def _build(self) -> None:
        self._add_namespace(self.switch)
        ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        ip("-n", self.switch, "link", "set", "br0", "up")
        for host in self.hosts.values():
            self._add_namespace(host.netns)
            ip(
                "link",
                "add",
                "eth0",
                "netns",
                host.netns,
                "type",
                "veth",
                "peer",
                "name",
                host.port,
                "netns",
                self.switch,
            )
            ip("-n", self.switch, "link", "set", host.port, "master", "br0")
            ip("-n", self.switch, "link", "set", host.port, "up")
            ip("-n", host.netns, "addr", "add", f"{host.address}/{PREFIX}", "dev", "eth0")
            ip("-n", host.netns, "link", "set", "eth0", "up")

    def cut(self, name: str) -> None:
        """Pull the host's cable: its bridge port goes down, and with it the carrier of its ``eth0``."""
        ip("-n", self.switch, "link", "set", self.hosts[name].port, "down")

    def restore(self, name: str) -> None:
        ip("-n", self.switch, "link", "set", self.hosts[name].port, "up")

    def start(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        """``argv`` inside host ``name`` (``ip netns exec`` execs it: the pid is the command's), output to a file."""
        log = log_path.open("w")
        self.logs.append(log)
        process = subprocess.Popen(
            self.hosts[name].command(argv), cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, env=child_env(env)
        )
        self.processes.append(process)
        return process

    def run(self, name: str, argv: list[str], timeout: float) -> str:
        """``argv`` inside host ``name`` to its end, bounded; its stdout (stderr in the error when it fails)."""
        done = subprocess.run(
            self.hosts[name].command(argv), cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise NetnsError(f"{argv[:3]} in {name}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
        return done.stdout

    def teardown(self) -> list[str]:
        """Kill what was started here, then delete every namespace made here (which takes the links with it);
        returns the deletions that failed, so a failure being raised is not hidden by one in the clean-up."""
        stop_processes(self.processes, grace=5, kill_wait=5)
        for log in self.logs:
            log.close()
        errors = []
        for name in reversed(self.made):
            try:
                ip("netns", "del", name)
            except NetnsError as exc:
                errors.append(str(exc))
        self.made.clear()
        return errors
