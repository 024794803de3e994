"""benchmarks/compare_noise.py end to end on tiny settings: it runs, judges each pair and writes its JSON (the counts
are the benchmark's figures, never asserted here)."""

import json

import pytest

from benchmarks import compare_noise


@pytest.mark.integration
@pytest.mark.timeout(200)
def test_a_tiny_benchmark_judges_one_pair_of_each_kind_and_writes_json(tmp_path, capsys):
    out = tmp_path / "compare_noise.json"
    argv = ["--pairs", "1", "--steps", "1", "--step-time", "2s", "--delay-ms", "5", "--burn-cores", "0"]
    assert compare_noise.main([*argv, "--work-dir", str(tmp_path / "runs"), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [c["kind"] for c in result["comparisons"]] == ["A/A", "A/B"]
    assert [r["run"] for r in result["runs"]] == ["A_0", "A_1", "B_1"]
    assert result["settings"]["delay_b"] == "const:10" and "false_alarms" in result
    assert "A/A (same target, const delay)" in capsys.readouterr().out


def test_bad_settings_are_refused_in_one_line(capsys):
    assert compare_noise.main(["--pairs", "0"]) == 2
    assert capsys.readouterr().err.startswith("benchmarks.compare_noise: give --pairs >= 1")
