"""``--scale`` below 1 is where the demo buys its short runs; at scale 1 and above every workload is what the index's
rows were judged on. These digests freeze each page's workloads (options, plan, expected exit, counts) at 1 and 2,
so a change meant for a short run cannot move them. A change that means to move them updates the digest here in the
same commit and says why."""

from __future__ import annotations

import hashlib
import json

import pytest

from swarmgauge.cli.demo_pages import pages

#: page -> the first 16 hex digits of the sha256 of its workloads, as main planned them on 2026-12-06 (686f059); mdk
#: moved on 2026-12-07: its fleet and reads runs start the stand-in with the Gateway's read lane (--gateway-read-us),
#: and its compared saturation steps measure 10 s after a warm-up (their first reads' flood read 5 % over the lane)
FROZEN = {
    1.0: {
        "demarkus": "0127db0cd0bb3e26",
        "kneo": "abee0378713f0041",
        "mdk": "c5e4b65a878d137b",
        "brain": "f22633970a07425b",
    },
    2.0: {
        "demarkus": "02df63899e5c1e30",
        "kneo": "979a16fae07dd4ff",
        "mdk": "1bce798b3e07cc2f",
        "brain": "c10e4ea7bebf35e9",
    },
}


def _digest(scale: float) -> dict[str, str]:
    found = {}
    for page in pages([], scale):
        items = [
            [w.name, w.what, w.locustfile, list(w.options), w.plan, w.expected_exit, w.count_ends_s, w.answered_after_s]
            for w in page.workloads
        ]
        found[page.name] = hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()[:16]
    return found


@pytest.mark.parametrize("scale", sorted(FROZEN))
def test_every_page_plans_at_scale_1_and_above_what_it_planned_before(scale):
    assert _digest(scale) == FROZEN[scale]
