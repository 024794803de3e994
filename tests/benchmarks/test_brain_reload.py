"""benchmarks/brain_reload.py runs both modes end to end with tiny counts and writes its figures (none asserted)."""

import json

import pytest

from benchmarks import brain_reload


@pytest.mark.integration
def test_brain_reload_writes_both_modes_with_their_model_loads(tmp_path):
    out = tmp_path / "brain.json"
    assert brain_reload.main(["--searches", "3", "--scale", "0.01", "--leak-kb", "64", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert rows["before (leak)"]["model_loads"] == 3 and rows["after (fixed)"]["model_loads"] == 1
