"""``--slo-junit``: one testcase per SLO, a failure in the threshold's unit, skipped for a gate -t cut short."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from swarmgauge.listeners.outcome import NOT_REACHED, Outcome
from swarmgauge.listeners.slo_junit import junit_xml


def _verdict(expr: str, metric: str, status: str, observed: float | None, value: float, unit: str = "", **extra):
    return {"expr": expr, "metric": metric, "op": "<", "value": value, "unit": unit, "status": status,
            "observed": observed, **extra}  # fmt: skip


def test_each_verdict_is_a_testcase_failed_ones_with_their_units_and_cut_ones_skipped():
    verdicts = [
        _verdict("p99<50ms", "p99", "fail", 82.6, 50.0, "ms"),
        _verdict("fail_ratio<1%", "fail_ratio", "pass", 0.001, 0.01, "%"),
        _verdict("GET:/x:p99<1s", "p99", "no data", None, 1000.0, "s"),
        _verdict("GET:/later:p99<5s", "p99", NOT_REACHED, None, 5000.0, "s", reason="-t stopped the plan at 4 s"),
    ]
    decided = Outcome(3, ["SLO failed (p99<50ms, GET:/x:p99<1s)", "cut short: ..."])
    suite = ET.fromstring(junit_xml(verdicts, decided).split("\n", 1)[1])
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped"), suite.get("errors")) == (
        "4",
        "2",
        "1",
        "0",
    )
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert cases["p99<50ms"].find("failure").get("message") == "fail: p99 observed 82.6 ms, threshold < 50 ms"
    assert cases["GET:/x:p99<1s"].find("failure").get("type") == "no data"
    assert list(cases["fail_ratio<1%"]) == []
    assert cases["GET:/later:p99<5s"].find("skipped").get("message") == (
        "not reached (cut short): -t stopped the plan at 4 s"
    )
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["exit_code"] == "3" and properties["exit_reason_1"].startswith("SLO failed")
    assert suite.find("system-out").text.splitlines()[0] == "exit code 3: SLO failed (p99<50ms, GET:/x:p99<1s)"
