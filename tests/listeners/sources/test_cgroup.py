"""cgroup v2 source: a real cgroup v2 directory where the machine has one, else a tree with the real file formats."""

from pathlib import Path

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners.sources import SourceError, parse_source
from swarmgauge.listeners.sources.cgroup import parse_flat_keyed

# memory.stat / cpu.stat as a Linux 6.x kernel writes them (abridged to the keys that matter, same layout)
MEMORY_STAT = """anon 52166656
file 31547392
kernel 3309568
kernel_stack 589824
sock 0
shmem 0
file_mapped 13520896
file_dirty 0
file_writeback 0
active_anon 51748864
inactive_anon 417792
active_file 16658432
inactive_file 14888960
unevictable 0
workingset_refault_anon 0
pgfault 140865
"""
CPU_STAT = """usage_usec 8471635
user_usec 6203117
system_usec 2268518
nr_periods 0
nr_throttled 0
throttled_usec 0
"""


def cgroup2_mounts() -> list[Path]:
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    return [Path(line.split()[1]) for line in lines if len(line.split()) > 2 and line.split()[2] == "cgroup2"]


@pytest.fixture
def fixture_cgroup(tmp_path):
    (tmp_path / "memory.current").write_text("87023616\n")
    (tmp_path / "memory.stat").write_text(MEMORY_STAT)
    (tmp_path / "memory.max").write_text("2147483648\n")
    (tmp_path / "cpu.stat").write_text(CPU_STAT)
    return tmp_path


def test_working_set_is_current_minus_inactive_file(fixture_cgroup):
    readings = {r.metric: r.value for r in parse_source(f"cgroup:{fixture_cgroup}").sample()}
    assert readings["memory_current_bytes"] == 87023616
    assert readings["working_set_bytes"] == 87023616 - 14888960
    assert readings["memory_max_bytes"] == 2147483648
    assert readings["cpu_usage_seconds"] == pytest.approx(8.471635)


def test_cpu_percent_from_usage_delta_and_unlimited_max(fixture_cgroup):
    source = parse_source(f"cgroup:{fixture_cgroup}")
    source.sample()
    (fixture_cgroup / "cpu.stat").write_text(CPU_STAT.replace("8471635", "9471635"))
    (fixture_cgroup / "memory.max").write_text("max\n")
    readings = {r.metric: r.value for r in source.sample()}
    assert readings["cpu_percent"] > 0
    assert "memory_max_bytes" not in readings


def test_a_cpu_limit_is_read_as_percent_of_a_core_and_no_limit_gives_none(fixture_cgroup):
    (fixture_cgroup / "cpu.max").write_text("50000 100000\n")
    readings = {r.metric: r.value for r in parse_source(f"cgroup:{fixture_cgroup}").sample()}
    assert readings["cpu_limit_percent"] == pytest.approx(50.0)
    (fixture_cgroup / "cpu.max").write_text("max 100000\n")
    assert "cpu_limit_percent" not in {r.metric for r in parse_source(f"cgroup:{fixture_cgroup}").sample()}


def test_real_cgroup_v2_directory():
    mounts = [m for m in cgroup2_mounts() if (m / "cpu.stat").exists() or (m / "memory.current").exists()]
    if not mounts:
        pytest.skip("no readable cgroup v2 mount on this machine; the fixture tree tests cover the formats")
    readings = {r.metric: r.value for r in parse_source(f"cgroup:{mounts[0]}").sample()}
    assert readings.get("cpu_usage_seconds", 0) > 0 or readings.get("memory_current_bytes", 0) > 0
    if "memory_current_bytes" in readings:
        assert 0 <= readings["working_set_bytes"] <= readings["memory_current_bytes"]


def test_missing_directory_and_garbage_are_source_errors(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        parse_source(f"cgroup:{tmp_path / 'gone'}").sample()
    with pytest.raises(SourceError, match="not a cgroup"):
        parse_source(f"cgroup:{tmp_path}").sample()
    (tmp_path / "memory.current").write_text("lots\n")
    with pytest.raises(SourceError, match="not a number"):
        parse_source(f"cgroup:{tmp_path}").sample()


def test_a_file_is_not_a_cgroup(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError):
        parse_source(f"cgroup:{tmp_path / 'f'}")


def test_flat_keyed_parser_skips_junk():
    assert parse_flat_keyed("a 1\nb x\n\nc -2\n") == {"a": 1, "c": -2}
