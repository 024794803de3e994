"""``psutil:`` source: RSS, USS, CPU, threads and fds of a target process and its children.

The target is named by ``pid=N``, ``pidfile=PATH`` (re-read every sample, so a restart that rewrites the file is
followed) or ``match=REGEX`` (searched in the command line; re-searched when the matched process dies, so restarts
are followed). Children are summed in, as a Go daemon's helper processes or a Python server's workers count
against the same memory budget. Append ``,uss`` to also read USS (slower: it walks the page maps).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import cast

import psutil

from swarmgauge.errors import UsageError

from . import Reading, SourceError

RESCAN_EVERY = 12  # samples between fresh command-line searches for match=, to pick up a second instance


def _own_lineage() -> set[int]:
    """This process and its ancestors: a sampler must never measure the load generator that started it."""
    pids = {os.getpid()}
    try:
        pids.update(p.pid for p in psutil.Process().parents())
    except psutil.Error:
        pass
    return pids


class MachineCpu:
    """The whole machine's busy CPU since the last sample, in % of one core (as a process's ``cpu_percent``): what
    every process together used, so a run can say whether the cores it shared were full, and whose they were."""

    def __init__(self) -> None:
        self._last: tuple[float, float] | None = None

    def sample(self) -> float | None:
        """None on the first call (no interval yet) and when no time passed."""
        times = psutil.cpu_times()
        total = sum(times)
        busy = total - times.idle - getattr(times, "iowait", 0.0)
        last, self._last = self._last, (total, busy)
        if last is None or total <= last[0]:
            return None
        share = (busy - last[1]) / (total - last[0])  # over 1 only by the float sums' rounding on full cores
        return min(1.0, max(0.0, share)) * 100.0 * (psutil.cpu_count() or 1)


class PsutilSource:
    """Reads a process tree with psutil; CPU % comes from cpu-time deltas between two samples."""

    label = "psutil"

    def __init__(
        self,
        *,
        pid: int | None = None,
        pidfile: Path | None = None,
        match: str | None = None,
        uss: bool = False,
        children: bool = True,
    ) -> None:
        self.pid, self.pidfile, self.uss, self.children = pid, pidfile, uss, children
        self.match = re.compile(match) if match is not None else None
        self._roots: list[psutil.Process] = []
        self._samples_since_scan = 0
        self._cpu_seen: dict[tuple[int, float], float] = {}
        self._cpu_at: float | None = None

    @classmethod
    def from_spec(cls, argument: str) -> PsutilSource:
        parts = [p.strip() for p in argument.split(",") if p.strip()]
        uss = "uss" in parts
        parts = [p for p in parts if p != "uss"]
        if len(parts) != 1 or "=" not in parts[0]:
            raise UsageError(f"psutil:{argument}: expected pid=N, pidfile=PATH or match=REGEX (optionally ,uss)")
        key, _, value = parts[0].partition("=")
        if key == "pid":
            if not value.isdigit():
                raise UsageError(f"psutil:{argument}: pid must be a number")
            return cls(pid=int(value), uss=uss)
        if key == "pidfile":
            return cls(pidfile=Path(value), uss=uss)
        if key == "match":
            try:
                return cls(match=value, uss=uss)
            except re.error as exc:
                raise UsageError(f"psutil:{argument}: bad regex: {exc}") from None
        raise UsageError(f"psutil:{argument}: unknown selector {key!r}; use pid=, pidfile= or match=")

    def _resolve_roots(self) -> list[psutil.Process]:
        if self.pid is not None:
            return [self._process(self.pid)]
        if self.pidfile is not None:
            try:
                text = self.pidfile.read_text().strip()
            except OSError as exc:
                raise SourceError(f"pid file {self.pidfile}: {exc.strerror or exc}") from None
            if not text.isdigit():
                raise SourceError(f"pid file {self.pidfile}: no pid in it")
            return [self._process(int(text))]
        alive = [p for p in self._roots if p.is_running()]
        self._samples_since_scan += 1
        if alive and len(alive) == len(self._roots) and self._samples_since_scan < RESCAN_EVERY:
            return alive
        self._samples_since_scan = 0
        self._roots = self._scan()
        if not self._roots:
            # neither pid nor pidfile is set, so from_spec was given match=
            raise SourceError(f"no process matches {cast(re.Pattern[str], self.match).pattern!r}")
        return self._roots

    def _process(self, pid: int) -> psutil.Process:
        for cached in self._roots:
            if cached.pid == pid and cached.is_running():
                return cached
        try:
            process = psutil.Process(pid)
        except psutil.NoSuchProcess:
            raise SourceError(f"process {pid} is gone") from None
        self._roots = [process]
        return process

    def _scan(self) -> list[psutil.Process]:
        excluded = _own_lineage()
        match = cast(re.Pattern[str], self.match)  # _scan runs only when neither pid nor pidfile is set
        found = []
        for process in psutil.process_iter(["pid", "cmdline"]):
            cmdline = " ".join(process.info.get("cmdline") or ())
            if process.pid in excluded or not cmdline or "psutil:match=" in cmdline:
                continue
            if match.search(cmdline):
                found.append(process)
        pids = {p.pid for p in found}
        # keep only the top of each matched tree; its children are summed in anyway
        return [p for p in found if not any(a.pid in pids for a in _parents(p))]

    def sample(self) -> list[Reading]:
        tree: dict[int, psutil.Process] = {}
        for root in self._resolve_roots():
            tree[root.pid] = root
            if not self.children:
                continue
            try:
                tree.update((c.pid, c) for c in root.children(recursive=True))
            except psutil.Error:
                pass
        rss = uss = threads = fds = 0
        cpu_now: dict[tuple[int, float], float] = {}
        counted = 0
        for process in tree.values():
            try:
                with process.oneshot():
                    mem = process.memory_info()
                    times = process.cpu_times()
                    threads += process.num_threads()
                    fds += process.num_fds()
                    if self.uss:
                        uss += process.memory_full_info().uss
                    key = (process.pid, process.create_time())
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                continue
            except psutil.AccessDenied as exc:
                raise SourceError(f"process {process.pid}: access denied ({exc.msg or 'psutil'})") from None
            rss += mem.rss
            cpu_now[key] = times.user + times.system
            counted += 1
        if not counted:
            raise SourceError("the target process exited")
        readings = [
            Reading("rss_bytes", rss),
            Reading("threads", threads),
            Reading("fds", fds),
            Reading("processes", counted),
        ]
        if self.uss:
            readings.append(Reading("uss_bytes", uss))
        now = time.monotonic()
        if self._cpu_at is not None and now > self._cpu_at:
            used = sum(t - self._cpu_seen.get(k, 0.0) for k, t in cpu_now.items())
            readings.append(Reading("cpu_percent", max(0.0, used) / (now - self._cpu_at) * 100.0))
        self._cpu_seen, self._cpu_at = cpu_now, now
        return readings


def _parents(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.parents()
    except psutil.Error:
        return []
