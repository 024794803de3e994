"""benchmarks/mdk_discovery_pairs.py: each workload of a pair differs only in how it finds its ids, and the figures
read back are the ones the index compares, from the steps they are measured in."""

from __future__ import annotations

from benchmarks.mdk_discovery_pairs import FLAG, _by, _figures
from swarmgauge.cli.demo_mdk import workloads


def test_a_pair_differs_only_in_the_discovery_option():
    drill = next(w for w in workloads(0.25) if w.name == "worker-restart")  # the demo lists its ids already
    fleet = next(w for w in workloads(0.25) if w.name == "fleet-2000x4")
    for workload in (drill, fleet):
        listed, summed = _by(workload, "kernel", "0"), _by(workload, "summary", "0")
        assert listed.options[listed.options.index(FLAG) + 1] == "kernel" and FLAG not in summed.options
        assert [o for o in listed.options if o not in (FLAG, "kernel")] == list(summed.options)
        assert listed.plan == summed.plan == workload.plan
        assert (listed.name, summed.name) == (f"{workload.name}-kernel-0", f"{workload.name}-summary-0")


def test_the_figures_come_from_their_own_steps(tmp_path):
    (tmp_path / "steps.csv").write_text(
        "label,name,rps,p50_ms\n"
        "one at a time,telemetry,3.1,305.5\n"
        "one at a time,summary,0.4,1050.0\n"
        "saturation reads,telemetry,1190.0,800.0\n"
        "saturation reads,Aggregated,1190.0,800.0\n"
        "action burst,action,990.0,72.8\n"
    )
    assert _figures(tmp_path) == {
        "read_p50_ms": 305.5,
        "summary_p50_ms": 1050.0,
        "saturation_rps": 1190.0,
        "burst_accept_p50_ms": 72.8,
    }
