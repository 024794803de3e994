"""``cgroup:PATH`` source: cgroup v2 memory and CPU, with working set computed as kubelet does.

Working set is ``memory.current - inactive_file`` (from ``memory.stat``), floored at zero: the figure the kubelet
evicts on and the one the reference pages quote. ``PATH`` is a cgroup directory, absolute or relative to
``/sys/fs/cgroup``. A directory that lacks the memory controller still yields CPU figures.
"""

from __future__ import annotations

import time
from pathlib import Path

from swarmgauge.errors import UsageError

from . import Reading, SourceError

CGROUP_ROOT = Path("/sys/fs/cgroup")


def parse_flat_keyed(text: str) -> dict[str, int]:
    """Parse a cgroup v2 "flat keyed" file (``memory.stat``, ``cpu.stat``): one ``key value`` per line."""
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            values[key] = int(value)
    return values


class CgroupSource:
    """Reads ``memory.current``, ``memory.stat``, ``memory.max``, ``cpu.stat`` and ``cpu.max`` of a cgroup v2 directory."""

    label = "cgroup"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cpu_prev: tuple[float, float] | None = None

    @classmethod
    def from_spec(cls, argument: str) -> CgroupSource:
        path = Path(argument)
        if not path.is_absolute():
            path = CGROUP_ROOT / path
        if path.exists() and not path.is_dir():
            raise UsageError(f"cgroup:{argument}: {path} is not a directory")
        return cls(path)

    def _read(self, name: str) -> str | None:
        try:
            return (self.directory / name).read_text()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SourceError(f"{self.directory / name}: {exc.strerror or exc}") from None

    def sample(self) -> list[Reading]:
        if not self.directory.is_dir():
            raise SourceError(f"cgroup directory {self.directory} does not exist")
        readings: list[Reading] = []
        current = self._read("memory.current")
        if current is not None:
            try:
                usage = int(current.strip())
            except ValueError:
                raise SourceError(f"{self.directory}/memory.current: not a number: {current.strip()[:40]!r}") from None
            stat = parse_flat_keyed(self._read("memory.stat") or "")
            inactive = stat.get("inactive_file", 0)
            readings += [
                Reading("memory_current_bytes", usage),
                Reading("inactive_file_bytes", inactive),
                Reading("working_set_bytes", max(0, usage - inactive)),
            ]
            if "anon" in stat:
                readings.append(Reading("anon_bytes", stat["anon"]))
            limit = (self._read("memory.max") or "").strip()
            if limit.isdigit():
                readings.append(Reading("memory_max_bytes", int(limit)))
        cpu_text = self._read("cpu.stat")
        if cpu_text is not None:
            cpu = parse_flat_keyed(cpu_text)
            if "usage_usec" in cpu:
                used_s = cpu["usage_usec"] / 1e6
                readings.append(Reading("cpu_usage_seconds", used_s))
                now = time.monotonic()
                if self._cpu_prev is not None and now > self._cpu_prev[0]:
                    readings.append(
                        Reading("cpu_percent", max(0.0, used_s - self._cpu_prev[1]) / (now - self._cpu_prev[0]) * 100)
                    )
                self._cpu_prev = (now, used_s)
        quota, _, period = (self._read("cpu.max") or "").strip().partition(" ")
        if quota.isdigit() and period.isdigit() and int(period) > 0:
            readings.append(Reading("cpu_limit_percent", int(quota) / int(period) * 100.0))  # the report's ceiling
        if not readings:
            raise SourceError(f"{self.directory}: no memory.current or cpu.stat (not a cgroup v2 directory?)")
        return readings
