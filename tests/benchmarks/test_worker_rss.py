"""benchmarks/worker_rss.py runs end to end with one round and writes its figures (no figure is asserted)."""

import json

from benchmarks import worker_rss


def test_worker_rss_benchmark_writes_every_case_and_sees_which_load_pandas(tmp_path):
    out = tmp_path / "worker_rss.json"
    assert worker_rss.main(["--rounds", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    cases = {row["case"]: row for row in result["cases"]}
    assert list(cases) == list(worker_rss.CASES)
    assert all(row["rss_mib"] > 0 and row["uss_mib"] > 0 for row in cases.values())
    assert cases["locust"]["rss_added_mib"] == 0
    assert cases["swarmgauge.locust"]["heavy_loaded"] == []
    assert "pandas" in cases["+ reports.report"]["heavy_loaded"]
    assert {"target_rss_added_mib", "reached", "load_average_start", "samples"} <= set(result)
