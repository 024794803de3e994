"""The first-handshake benchmark refuses counts it cannot run in one line; its figures are not asserted."""

from __future__ import annotations

import pytest

from benchmarks.first_handshake import main


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--handshakes", "1"], ["--rounds", "51"]])
def test_a_count_out_of_range_is_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("first_handshake:")
