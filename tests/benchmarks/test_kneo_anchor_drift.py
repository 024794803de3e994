"""benchmarks/kneo_anchor_drift.py: per step of a hand-made sweep, kneo-serv's CPU a run from the sampler's counter,
the anchor's two halves and the probe's loops in the step's window; bad options are refused in one line."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks import kneo_anchor_drift

PIDFILE = "/tmp/swarmgauge-kneo-x/kneo-serv-0.pid"
KNEO = f"psutil:pidfile={PIDFILE}"
T0 = 1000.0


@pytest.mark.parametrize(
    "argv", [["--runs", "0"], ["--runs", "99"], ["--scale", "0"], ["--workload", "nope"], ["--before", "kneo/x"]]
)
def test_a_bad_option_is_refused_in_one_line(argv, tmp_path, capsys):
    assert kneo_anchor_drift.main([*argv, "--out", str(tmp_path / "x.json")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def test_each_step_gives_kneo_serv_s_cpu_a_run_the_anchors_halves_and_the_probe_in_its_window(tmp_path):
    # step 0 (1 user): 6 rounds, 30 ms a run in its first half, 20 in its second; step 1 (8 users): 4 rounds, 20 ms
    shares = [(0, 90.0, 30), (0, 90.0, 30), (0, 90.0, 30), (0, 90.0, 45), (0, 90.0, 45), (0, 90.0, 45)]
    shares += [(1, 88.0, 44)] * 4
    samples, done = [], 0
    for n, (step, share, runs) in enumerate(shares):
        done += runs
        when = T0 + n
        samples += [
            (when, step, KNEO, "cpu_percent", share, n),
            (when, step, "prom:x", "kneo_runs_completed_total", done, n),
            (when, step, "machine", "cpu_percent", 100.0, n),
        ]
    pd.DataFrame(samples, columns=["time", "step", "source", "metric", "value", "round"]).to_csv(
        tmp_path / "resources.csv", index=False
    )
    steps = [
        {"step": 0, "name": "Aggregated", "users": 1, "rps": 37.0, "started_at": T0 - 0.5, "duration_s": 6.0},
        {"step": 1, "name": "Aggregated", "users": 8, "rps": 44.0, "started_at": T0 + 5.5, "duration_s": 4.0},
    ]
    pd.DataFrame(steps).to_csv(tmp_path / "steps.csv", index=False)
    probe = [{"t": T0 + n, "arith_ms": 7.0 if n < 6 else 10.0, "alloc_ms": 2.0, "steal": 0.0} for n in range(10)]
    first, second = kneo_anchor_drift.per_step(tmp_path, probe)
    # the step's first round straddles the change of users and the very first has no count before it: rounds 2-5
    assert first["users"] == 1 and first["anchor_halves_ms"] == [24.0, 20.0]
    assert second["kneo_cpu_ms_a_run"] == 20.0 and second["kneo_share"] == 88.0
    assert first["probe_arith_ms"] == 7.0 and second["probe_arith_ms"] == 10.0
    assert kneo_anchor_drift.pidfile_of(tmp_path) == PIDFILE
