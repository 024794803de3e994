"""The receive-pass benchmark's options and where its servers run from (no measured run: figures only)."""

from __future__ import annotations

import os
import sys

import pytest

from benchmarks.mark_receive_passes import ROOT, launch_server_of, main


def test_servers_other_than_one_or_each_are_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--servers", "both"])
    assert exited.value.code == 2
    assert "--servers: invalid choice" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_trees_server_runs_from_that_tree_and_leaves_our_directory_alone():
    """``python -m`` imports from its working directory before ``PYTHONPATH``: the server must start in its tree."""
    before = os.getcwd()
    with launch_server_of(ROOT, ["--port", "0"]) as server:
        assert os.readlink(f"/proc/{server.pid}/cwd") == str(ROOT)
        environ = open(f"/proc/{server.pid}/environ", "rb").read().split(b"\0")
        assert f"PYTHONPATH={ROOT}".encode() in environ
    assert os.getcwd() == before
