"""``benchmarks/host_speed.py``: the probe before and after each MDK read measurement, in turn, and the medians of
both written to a file of the run's own. The read measurement is replaced by a fake here (it has its own test in
``test_mdk_read_cpu.py``; forking its components needs a one-thread process, not an xdist worker)."""

from __future__ import annotations

import json
import sys

from benchmarks import host_speed


def test_each_repeat_probes_around_a_read_measurement_and_the_medians_are_written(monkeypatch, tmp_path, capsys):
    probes = iter([30.0, 31.0, 50.0, 52.0])
    monkeypatch.setattr(host_speed, "probe_ms", lambda: next(probes))
    reads = iter([0.8, 1.0])

    def fake_measure(devices, workers, readers, seconds, *, fork):
        assert (devices, workers, readers, fork) == (20, 2, 5, True)
        return {"stand_in_ms_per_read": next(reads), "reads_per_s": 100.0}

    monkeypatch.setattr(host_speed, "measure", fake_measure)
    out = tmp_path / "speed.json"
    argv = ["host_speed", "--repeats", "2", "--fleet", "20x2", "--readers", "5", "--seconds", "1", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    host_speed.main()
    written = json.loads(out.read_text())
    assert [run["probe_ms_before"] for run in written["runs"]] == [30.0, 50.0]
    assert written["summary"]["probe_ms_median"] == 40.5
    assert written["summary"]["stand_in_ms_per_read_range"] == [0.8, 1.0]
    assert "probe median 40.5 ms" in capsys.readouterr().out
