"""``gctrace:LOGFILE`` source: follows a Go program's ``GODEBUG=gctrace=1`` lines for live heap and GC count.

Go prints one line per collection to stderr, e.g. (Go 1.19 and later)::

    gc 12 @3.201s 1%: 0.018+1.2+0.003 ms clock, 0.14+0.5/1.0/0+0.024 ms cpu, 4->4->2 MB, 5 MB goal, 0 MB stacks, 0 MB globals, 8 P

``4->4->2 MB`` is heap at GC start -> heap at GC end -> live heap (marked), in MiB (the runtime shifts by 20).
The file is tailed like ``tail -F``: only new bytes are read each poll, a rename (logrotate) or truncation
(copytruncate) is detected and followed, partial lines wait for their newline, and lines from other writers
(log prefixes, JSON logs, scavenger lines) are skipped.

The points of the series are the GCs themselves: a poll reports each collection logged since the last poll (the
first poll only the newest one of the log's tail) and nothing when none ran. Re-reporting the last GC between
collections made the live heap lag and weighted a trend by when the GC happened to run; now a series' point count
is its GC count, and ``verdict`` can refuse to judge on too few (``MIN_GCS_FOR_VERDICT``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from . import MIB, Reading, SourceError

GC_LINE = re.compile(
    r"\bgc (?P<num>\d+) @(?P<at>[\d.]+)s (?P<pct>\d+)%: [\d.+/]+ ms clock, [\d.+/]+ ms cpu, "
    r"(?P<start>\d+)->(?P<end>\d+)->(?P<live>\d+) MB, (?P<goal>\d+) MB goal"
    r"(?:, (?P<stacks>\d+) MB stacks)?(?:, (?P<globals>\d+) MB globals)?, (?P<procs>\d+) P"
)
SEED_TAIL_BYTES = 64 * 1024  # how far back the first poll looks for the most recent GC line
MAX_READ_BYTES = 8 * MIB  # one poll reads at most this much; a flood is caught up over several polls
MAX_GCS_PER_POLL = 1000  # a poll after a long pause reports the newest this many GCs (the older ones are dropped)


@dataclass(frozen=True)
class GcLine:
    """One parsed gctrace line, sizes in bytes."""

    number: int
    at_seconds: float
    cpu_percent: int
    heap_start: int
    heap_end: int
    live_heap: int
    heap_goal: int
    stacks: int | None
    globals: int | None
    procs: int


def parse_gc_line(line: str) -> GcLine | None:
    """Parse a gctrace line (anywhere in ``line``); ``None`` for lines from other writers."""
    m = GC_LINE.search(line)
    if m is None:
        return None
    opt = lambda name: int(m[name]) * MIB if m[name] is not None else None  # noqa: E731
    return GcLine(
        int(m["num"]),
        float(m["at"]),
        int(m["pct"]),
        int(m["start"]) * MIB,
        int(m["end"]) * MIB,
        int(m["live"]) * MIB,
        int(m["goal"]) * MIB,
        opt("stacks"),
        opt("globals"),
        int(m["procs"]),
    )


class GctraceSource:
    """Tails one log file and reports the newest GC line's figures."""

    label = "gctrace"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO | None = None
        self._inode: tuple[int, int] | None = None
        self._partial = b""
        self.last: GcLine | None = None
        self.gcs_seen = 0
        self._new: list[GcLine] = []

    @classmethod
    def from_spec(cls, argument: str) -> GctraceSource:
        return cls(Path(argument))

    def _open(self, seed: bool) -> None:
        self.close()
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SourceError(f"{self.path}: {exc.strerror or exc}") from None
        st = os.fstat(handle.fileno())
        self._file, self._inode, self._partial = handle, (st.st_dev, st.st_ino), b""
        if seed and st.st_size > SEED_TAIL_BYTES:
            handle.seek(st.st_size - SEED_TAIL_BYTES)
            handle.readline()  # drop the cut first line

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = None

    def _drain(self) -> None:
        # called only after sample() has seen the file open
        data = cast(BinaryIO, self._file).read(MAX_READ_BYTES)
        if not data:
            return
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for raw in lines:
            parsed = parse_gc_line(raw.decode("utf-8", "replace"))
            if parsed is not None:
                self.last = parsed
                self.gcs_seen += 1
                self._new.append(parsed)
        del self._new[:-MAX_GCS_PER_POLL]

    def sample(self) -> list[Reading]:
        """The readings of every GC logged since the last poll, oldest first; ``[]`` when none ran."""
        first_poll = self._inode is None
        if self._file is None:
            self._open(seed=first_poll)
        if self._file is not None:
            self._drain()
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_dev, st.st_ino) != self._inode:
                self._open(seed=False)  # rotated by rename: the old file is drained, read the new one from 0
                self._drain()
            elif st is not None and st.st_size < self._file.tell():
                self._file.seek(0)  # truncated in place (copytruncate)
                self._partial = b""
                self._drain()
        if self._file is None and self.last is None:
            raise SourceError(f"log file {self.path} does not exist")
        new, self._new = self._new, []
        if first_poll:
            new = new[-1:]  # the log's tail may go back to before the run: only its newest GC is "now"
        return [reading for gc in new for reading in gc_readings(gc)]


def gc_readings(gc: GcLine) -> list[Reading]:
    """The readings of one collection."""
    readings = [
        Reading("live_heap_bytes", gc.live_heap),
        Reading("heap_goal_bytes", gc.heap_goal),
        Reading("heap_at_gc_start_bytes", gc.heap_start),
        Reading("gc_count", gc.number),
        Reading("gc_cpu_percent", gc.cpu_percent),
    ]
    if gc.stacks is not None:
        readings.append(Reading("stacks_bytes", gc.stacks))
    return readings
