"""The MDK benchmark page's rows the demo does not attempt, each with why in one line (the index lists them under
"not reproducible here"; every other row of the page is a workload's figure in ``index_mdk``)."""

from __future__ import annotations

#: (the page's row, why it is not attempted here)
NOT_REPRODUCIBLE = [
    (
        "peak RSS: Kernel + Gateway + one Worker 340-400 MiB, 80-120 MiB per extra Worker",
        "Node.js processes' memory; the stand-in's Python processes measure only themselves",
    ),
    (
        "the Avalon driver alone took 318-333 ms per metrics pull (informal check)",
        "an unpublished check of the real driver; the stand-in's read cost is its --read-cost-ms setting",
    ),
    (
        "memory and file-descriptor slopes over the 60 s soak",
        "indicative only on the page; the stand-in's slopes are the RSS slope gate of each fleet run, not MDK's",
    ),
    (
        "Gateway rate limit: past the first few hundred requests every one 429 at >= 500 devices",
        "an unpublished observation; the stand-in's --rate-limit answers 429 by construction, so it would echo a setting",
    ),
    (
        "a hung device costs the 10 s per-device timeout per 500-device wave (analytical)",
        "the page's own worst-case arithmetic, not a measurement",
    ),
    (
        "one 10-device Worker restart served reads 20.8 s after READY",
        "an unexplained outlier of one drill in 32; the drills here run once each",
    ),
    ("One Gateway connects to exactly one Kernel; multi-site aggregation", "architecture, not a measurement"),
    (
        "one device sustains about 3 reads/s (its reads run one after another)",
        "the stand-in serialises a device's reads at its --read-cost-ms by construction: a figure would echo it",
    ),
    (
        "after a Kernel restart, commands in flight settle as TIMEOUT / ERR_COMMAND_UNCONFIRMED, never re-sent",
        "the kernel-restart drill runs under readers only; the stand-in's write-ahead log is checked by its tests",
    ),
    (
        "every failed read of the outage drill returned in under 10 ms",
        "the drill records when channels failed, not each failed read's own time",
    ),
    (
        "the Kernel's CPU tracks total devices more than Workers",
        "the stand-in's Kernel cost per device is its --accept-us-per-device setting; only its highest CPU is shown",
    ),
    (
        "recommended envelopes: up to 1,000 devices per Worker, one Kernel and Gateway per site",
        "advice derived from the measured limits, not a measurement",
    ),
]
