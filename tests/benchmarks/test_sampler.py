"""benchmarks/sampler.py runs end to end with tiny counts and writes its figures (no figure is asserted)."""

import json

from benchmarks import sampler


def test_sampler_benchmark_writes_every_source(tmp_path):
    out = tmp_path / "sampler.json"
    assert sampler.main(["--samples", "3", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert {c["source"] for c in result["cases"]} == {"psutil", "cgroup", "gctrace", "pprof", "expvar", "prom"}
    assert all(c["failures"] == 0 for c in result["cases"])
    assert "five_sources_core_percent" in result
