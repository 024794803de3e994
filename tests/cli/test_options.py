"""``swarmgauge options LOCUSTFILE`` lists swarmgauge's and the locustfile's options, which ``locust --help`` lacks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from swarmgauge.cli.options import main


@pytest.mark.integration  # starts a Python process that imports Locust and the locustfile
def test_the_help_lists_swarmgauges_options_and_the_locustfiles_own():
    shown = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "options", "locustfiles/mdk_fleet.py"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    for option in ("--run-dir", "--steps", "--slo", "--sample", "--mdk-scenario", "--mdk-drill"):
        assert option in shown.stdout
    assert "--headless" in shown.stdout  # Locust's own options are all still there
    help_text = " ".join(shown.stdout.split())
    assert "Defaults to 127.0.0.1" in help_text and "Defaults to '*'" not in help_text  # --web-host's real default


def test_a_missing_locustfile_or_no_argument_is_one_line_and_exit_2(capsys, tmp_path):
    assert main([str(tmp_path / "nowhere.py")]) == 2
    assert capsys.readouterr().err.strip() == f"swarmgauge options: no locustfile at {tmp_path / 'nowhere.py'}"
    assert main([]) == 2 and main(["--help"]) == 2
    assert capsys.readouterr().err.startswith("usage: swarmgauge options LOCUSTFILE")
