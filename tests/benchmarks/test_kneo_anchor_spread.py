"""benchmarks/kneo_anchor_spread.py: from a hand-made interleaved sweep, each step over its neighbouring c=1 steps,
over every c=1 step and over the two ends, and each c=1 step's runs a second in its measured seconds; a folder with
no sweep is refused in one line."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchmarks import kneo_anchor_spread

T0 = 1000.0


def write_sweep(folder, points):
    """steps.csv and timeline.csv of one sweep: (users, runs a second for each measured second), 2 s warm-up each."""
    folder.mkdir(parents=True)
    rows, timeline, start = [], [], T0
    for step, (users, counts) in enumerate(points):
        seconds = len(counts)
        rows.append(
            {
                "step": step,
                "request_type": "run sync",
                "name": "agent:echo.yaml",
                "users": users,
                "started_at": start,
                "duration_s": float(seconds),
                "requests": sum(counts),
                "rps": sum(counts) / seconds,
                "p50_ms": 25.0 * users,
            }
        )
        timeline += [(start + 2 + k, step, count) for k, count in enumerate(counts)]
        start += 2 + seconds
    pd.DataFrame(rows).to_csv(folder / "steps.csv", index=False)
    pd.DataFrame(timeline, columns=["time", "step", "requests"]).to_csv(folder / "timeline.csv", index=False)


def test_each_step_over_its_neighbours_every_c1_and_the_ends_and_each_anchors_spread(tmp_path, capsys):
    demo = tmp_path / "demo"
    drifting = [(1, [30] * 5), (4, [31] * 7), (1, [32, 30, 32, 30, 31]), (8, [40] * 7), (1, [40] * 5)]
    for name in kneo_anchor_spread.SWEEPS:
        write_sweep(demo / "kneo" / name / "latest", drifting)
    out = tmp_path / "spread.json"
    assert kneo_anchor_spread.main([str(demo), "--out", str(out)]) == 0
    sweep = json.loads(out.read_text())["sweeps"][0]
    assert [a["step"] for a in sweep["anchors"]] == [0, 2, 4]
    assert sweep["anchors"][1]["per_second"] == [32, 30, 32, 30, 31] and sweep["anchors"][1]["runs"] == 155
    assert sweep["anchors"][1]["sd_per_second"] == pytest.approx(1.0)
    four, eight = sweep["steps"]
    assert four["neighbours"] == [0, 2] and four["over_neighbours"] == pytest.approx(31 / 30.5)
    assert four["over_all_c1"] == pytest.approx(31 / (505 / 15)) and four["over_ends"] == pytest.approx(31 / 35)
    assert eight["neighbours"] == [2, 4] and eight["over_neighbours"] == pytest.approx(40 / 35.5)
    assert "c=4 (step 1) 31.0 runs/s over: its neighbours [0, 2] 1.02" in capsys.readouterr().out


def test_a_folder_without_a_sweep_is_refused_in_one_line(tmp_path, capsys):
    assert kneo_anchor_spread.main([str(tmp_path), "--out", str(tmp_path / "x.json")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()
