"""psutil source against real child processes of known growth."""

import subprocess
import sys
import textwrap
import time
from collections import namedtuple

import psutil
import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners.sources import MIB, SourceError, parse_source
from swarmgauge.listeners.sources.proc import MachineCpu, PsutilSource

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

GROWER = textwrap.dedent("""
    import sys, time
    held = []
    print("ready", flush=True)
    for line in sys.stdin:
        if line.startswith("grow"):
            held.append(bytearray(b"x") * (int(line.split()[1]) * 1048576))
        elif line.startswith("spawn"):
            import subprocess
            child_code = "import time; b = bytearray(b'y') * (40 * 1048576); print('held', flush=True); time.sleep(30)"
            child = subprocess.Popen([sys.executable, "-c", child_code], stdout=subprocess.PIPE, text=True)
            child.stdout.readline()  # the child holds its 40 MiB now, however slow a loaded machine starts it
        print("done", flush=True)
""")


@pytest.fixture
def grower():
    proc = subprocess.Popen(
        [sys.executable, "-c", GROWER, "swarmgauge-test-grower"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready"

    def command(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"

    yield proc, command
    proc.kill()
    proc.wait()
    import psutil

    for child in psutil.Process().children(recursive=True):
        child.kill()


def values(source) -> dict[str, float]:
    return {r.metric: r.value for r in source.sample()}


@pytest.mark.timeout(30)
def test_rss_grows_by_the_known_amount(grower):
    proc, command = grower
    source = parse_source(f"psutil:pid={proc.pid}")
    before = values(source)
    command("grow 100")
    after = values(source)
    assert 90 * MIB <= after["rss_bytes"] - before["rss_bytes"] <= 130 * MIB
    assert after["threads"] >= 1 and after["fds"] >= 3 and after["processes"] == 1
    assert "cpu_percent" in after and after["cpu_percent"] >= 0


@pytest.mark.timeout(30)
def test_children_are_summed_and_uss_when_asked(grower, tmp_path):
    proc, command = grower
    pidfile = tmp_path / "target.pid"
    pidfile.write_text(f"{proc.pid}\n")
    source = parse_source(f"psutil:pidfile={pidfile},uss")
    alone = values(source)
    command("spawn")
    with_child = values(source)
    assert with_child["processes"] == 2
    assert with_child["rss_bytes"] - alone["rss_bytes"] >= 35 * MIB
    assert with_child["uss_bytes"] > 0


@pytest.mark.timeout(30)
def test_match_follows_a_restart():
    marker = "swarmgauge-match-target-7c1"
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", marker])
    try:
        source = PsutilSource.from_spec(f"match={marker}")
        assert values(source)["processes"] == 1
        first.kill()
        first.wait()
        with pytest.raises(SourceError, match="no process matches"):
            source.sample()
        second = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", marker])
        try:
            assert values(source)["processes"] == 1
            assert source._roots[0].pid == second.pid
        finally:
            second.kill()
            second.wait()
    finally:
        first.kill()


def test_a_process_that_is_gone_is_a_source_error():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(SourceError, match="gone"):
        parse_source(f"psutil:pid={proc.pid}").sample()


def test_a_missing_or_empty_pidfile_is_a_source_error(tmp_path):
    with pytest.raises(SourceError, match="pid file"):
        parse_source(f"psutil:pidfile={tmp_path / 'none.pid'}").sample()
    (tmp_path / "empty.pid").write_text("\n")
    with pytest.raises(SourceError, match="no pid"):
        parse_source(f"psutil:pidfile={tmp_path / 'empty.pid'}").sample()


@pytest.mark.parametrize("spec", ["psutil:pid=abc", "psutil:who=1", "psutil:match=(", "psutil:", "nosuch:x", "psutil"])
def test_bad_specs_are_usage_errors(spec):
    with pytest.raises(UsageError):
        parse_source(spec)


def test_the_machines_cpu_is_every_process_together_in_percent_of_one_core():
    machine = MachineCpu()
    assert machine.sample() is None  # no interval yet
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline:  # this process busy for a while: at least part of one core
        pass
    busy = machine.sample()
    assert busy is not None and 0 < busy <= 100 * (psutil.cpu_count() or 1)


def test_full_cores_whose_times_round_past_them_read_as_full(monkeypatch):
    """psutil's per-field times summed twice can put busy a hair over the total on full cores (a clean-clone run read
    200.0000000036 % of 2 cores): the share is of the elapsed time, so never over all of it, nor under none."""
    Times = namedtuple("Times", "user system idle iowait")
    samples = iter([Times(10.0, 0.0, 5.0, 0.0), Times(10.3, 0.0, 5.0 - 1e-9, 0.0), Times(10.3 - 1e-9, 0.0, 5.1, 0.0)])
    monkeypatch.setattr(psutil, "cpu_times", lambda: next(samples))
    monkeypatch.setattr(psutil, "cpu_count", lambda: 2)
    machine = MachineCpu()
    assert machine.sample() is None
    assert machine.sample() == 200.0
    assert machine.sample() == 0.0
