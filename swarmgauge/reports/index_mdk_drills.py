"""The MDK page's failure drills in the demo index: each drill's times beside the page's, and the order checks
(a restart's first device read comes at or after READY; an outage fails snap first, then the cached channels)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import Check, figure, seconds

#: The demo's modelled boot of a restarted Kernel or Worker (``--restart-boot-s``): the real ones are Node.js
#: processes that load their runtime and store before they listen; the page's procedures expect READY "in about 4 to
#: 6 s", so 5 s. The stand-in without it is up in 0.1 s, which would compare a Python start against Node.js's.
RESTART_BOOT_S = 5.0


def boot_set_by(boot_s: float = RESTART_BOOT_S) -> str:
    """What sets READY and the first read: the boot the drill ran with (``--scale`` below 1 shortens it)."""
    text = f"--restart-boot-s {boot_s:g} (a Node.js Kernel or Worker's boot: the page's 'about 4 to 6 s'"
    if boot_s < RESTART_BOOT_S:
        return f"{text}, shortened to {boot_s / RESTART_BOOT_S:g} of it by --scale)"
    return f"{text})"


BOOT_SET_BY = boot_set_by()
#: the stand-in mock's live snap read (``--read-cost-ms``, the page's 220 to 390 ms per device read): the first read
#: after the devices are back is one such read, so the setting makes that figure
READ_COST_SET_BY = "--read-cost-ms 220-390 (the mock's live snap read; the first read after the return is one)"
#: drill figure -> (the page's figure as shown, the number the ratio is taken against in s, tolerance, set by)
MDK_DRILL_PAGE: dict[str, tuple[str, float, float, str | None]] = {
    # the page's 3.4 to 8.5 s is 6.0 s +- 43 %; the boot setting makes most of it
    "READY": ("3.4 to 8.5 s", 6.0, 0.43, BOOT_SET_BY),
    # a ceiling ("under 3.5 s"): anything from none to twice it is its noise; no setting makes this gap
    "read after READY": ("< 3.5 s (29 of 32)", 3.5, 1.0, None),
    # the page's own spans from the kill: worker 4.9 to 9.7 s (7.3 +- 33 %), Kernel 5.2 to 8.9 s (7.05 +- 26 %)
    "first device read (worker-restart)": ("4.9 to 9.7 s", 7.3, 0.33, BOOT_SET_BY),
    "first device read (kernel-restart)": ("5.2 to 8.9 s", 7.05, 0.26, BOOT_SET_BY),
    # tens of ms on either side: a refused connection costs almost nothing
    "snap failed": ("about 0.03 s", 0.03, 1.0, None),
    # The driver's 5 s cache expires 5 s after its last refresh, and readers refresh it all the time, so from the
    # outage the cached channels fail anywhere in 0 to 5 s: the page's one drill saw 4.7 s, one sample of that
    # window. Graded against the window (2.5 s +- 100 %), whose width the cache setting fixes.
    "cached channels failed": ("about 4.7 s (one sample of the 0 to 5 s window)", 2.5, 1.0, "--cache-s 5"),
    # The page's drill ran after its load and timed one telemetry call once the mocks were back: one device read,
    # whose time is the live snap read's. The drill here times its device's first read the same way (the readers
    # leave that device to it: reads to one device run one after another, so theirs would queue ahead of it), and
    # that read's time is the stand-in mock's read cost.
    "reads again after devices back": ("about 0.35 s", 0.35, 1.0, READ_COST_SET_BY),
}


def drill_check(drill: dict[str, Any]) -> Check:
    name = drill.get("drill", "?")
    if not drill.get("recovered"):
        return Check(False, f"{name} did not recover ({drill.get('note') or 'no note'})")
    if name == "device-outage":
        snap, cached, back = drill.get("snap_failed_s"), drill.get("cached_failed_s"), drill.get("restored_read_s")
        holds = snap is not None and cached is not None and back is not None and snap <= cached < back
        return Check(
            holds, f"outage: snap failed {seconds(snap)}, cached channels {seconds(cached)}, reads {seconds(back)}"
        )
    ready, read = drill.get("ready_s"), drill.get("first_read_s")
    holds = ready is not None and read is not None and read >= ready
    return Check(holds, f"{name}: READY {seconds(ready)}, first device read {seconds(read)}")


def drill_checks(drills: list[dict[str, Any]]) -> list[Check]:
    return [drill_check(d) for d in drills]


def drill_rows(drill: dict[str, Any]) -> list[dict[str, Any]]:
    restored, restored_read = drill.get("restored_s"), drill.get("restored_read_s")
    back = None if restored is None or restored_read is None else restored_read - restored
    figures = {
        "READY": drill.get("ready_s"),
        "read after READY": drill.get("read_after_ready_s"),
        f"first device read ({drill.get('drill')})": drill.get("first_read_s"),
        "snap failed": drill.get("snap_failed_s"),
        "cached channels failed": drill.get("cached_failed_s"),
        "reads again after devices back": back,
    }
    rows = []
    for event, value in figures.items():
        if value is None or event not in MDK_DRILL_PAGE:
            continue
        page, against, tolerance, set_by = MDK_DRILL_PAGE[event]
        if set_by == BOOT_SET_BY and drill.get("boot_s") is not None:
            set_by = boot_set_by(drill["boot_s"])
        shown = figure(event, value, against, seconds, tolerance=tolerance, set_by=set_by)
        shown.pop("figure")
        rows.append({"drill": drill.get("drill"), "event": event.split(" (")[0], **shown, "page": page})
    return rows


def drill_table(drills: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([row for drill in drills for row in drill_rows(drill)])
