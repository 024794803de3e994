"""A --run-dir the run could not write into is refused before the load: exit 2, one line naming the folder and the
reason, no user started, no embedded target started, headless and on a master (issue 33: a file, a read-only
folder or a full disk were found only after the whole load ran, with four tracebacks and no results)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.run_folders import MIN_FREE_BYTES, check_parent
from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT
from tests.listeners.sim_run import ROOT, free_port, locust_command

RUN_SECONDS = 120.0
EMBEDDED = REPO_ROOT / "locustfiles/demarkus_reads.py"
SHORT_PLAN = ("--steps", "1", "--step-time", "2")


def _locust_refusing(run_dir: Path, *extra: str, wrap: list[str] | None = None) -> subprocess.CompletedProcess:
    """A headless run of a locustfile with an embedded target, expected to be refused at init."""
    command = locust_command(EMBEDDED, "FetchUser", "--headless", *SHORT_PLAN, "--run-dir", str(run_dir), *extra)
    return subprocess.run(
        [*(wrap or []), *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        env=child_env(),
    )


def _assert_refused_before_the_load(result: subprocess.CompletedProcess, run_dir: Path, reason: str) -> None:
    ours = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert result.returncode == 2, result.stderr[-3000:]
    assert ours == [ours[0]] and str(run_dir) in ours[0] and reason in ours[0], result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "embedded" not in result.stderr, "an embedded target started before the check"
    assert "Ramping" not in result.stderr and "spawn" not in result.stderr.lower(), "users started before the check"


def _in_a_mount_namespace(tmp_path: Path, mount_options: str) -> tuple[Path, list[str]]:
    """A folder and a command prefix that runs the rest with a fresh tmpfs mounted there, in a private mount
    namespace (the mount goes away with the process: nothing is left mounted if the test dies)."""
    if shutil.which("unshare") is None:
        pytest.skip("util-linux's unshare is not installed")
    folder = tmp_path / "mounted"
    folder.mkdir()
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o {mount_options} tmpfs {folder}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        pytest.skip(f"mount refused here (needs root or CAP_SYS_ADMIN): {probe.stderr.strip()}")
    script = f'mount -t tmpfs -o {mount_options} tmpfs {folder} && exec "$@"'
    return folder, ["unshare", "-m", "sh", "-c", script, "sh"]


def test_a_file_and_a_folder_under_a_file_are_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        check_parent(tmp_path / "afile")
    with pytest.raises(UsageError, match=r"lies under .*afile, which is a file"):
        check_parent(tmp_path / "afile" / "runs")


def test_a_writable_folder_with_room_passes_and_is_left_clean_and_a_missing_one_is_not_made(tmp_path):
    check_parent(tmp_path)
    assert list(tmp_path.iterdir()) == []
    check_parent(tmp_path / "runs" / "today")  # its nearest existing parent is probed
    assert list(tmp_path.iterdir()) == [], "a run refused after the check (a missing host) leaves no folder behind"


@pytest.mark.integration
def test_a_file_as_run_dir_is_refused_before_the_embedded_target_starts(tmp_path):
    run_dir = tmp_path / "afile"
    run_dir.write_text("not a folder")
    _assert_refused_before_the_load(_locust_refusing(run_dir), run_dir, "is a file, not a folder")


@pytest.mark.integration
def test_a_file_as_run_dir_is_refused_on_a_master_before_it_waits_for_workers(tmp_path):
    run_dir = tmp_path / "afile"
    run_dir.write_text("not a folder")
    master = ("--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(free_port()))
    result = _locust_refusing(run_dir, *master, "--expect-workers", "1", "--expect-workers-max-wait", "60")
    _assert_refused_before_the_load(result, run_dir, "is a file, not a folder")
    assert "Waiting for workers" not in result.stderr


@pytest.mark.integration
def test_a_read_only_run_dir_is_refused_before_the_load(tmp_path):
    # root writes through chmod 0500, so the folder is a tmpfs mounted read-only, as a read-only volume is
    folder, wrap = _in_a_mount_namespace(tmp_path, "ro,size=16m")
    run_dir = folder / "runs"
    _assert_refused_before_the_load(
        _locust_refusing(run_dir, wrap=wrap), run_dir, "not writable (Read-only file system)"
    )


@pytest.mark.integration
def test_a_run_dir_on_a_disk_without_room_is_refused_before_the_load(tmp_path):
    folder, wrap = _in_a_mount_namespace(tmp_path, "size=1m")
    assert MIN_FREE_BYTES > 1024 * 1024
    result = _locust_refusing(folder, wrap=wrap)
    _assert_refused_before_the_load(result, folder, "MiB free on its disk; a run needs at least 8 MiB")
