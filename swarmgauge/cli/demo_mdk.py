"""The MDK benchmark page's workloads: its five fleets, the read-throughput pairs, the three failure drills.

Each fleet runs the page's per-profile measurements on the stand-in at the page's size (``--mdk-profile``), one
after another in one Locust run: one request at a time (device read, fleet summary, single action accept), the
saturation reads, then the 1,000 submits/s burst. The stand-in's collection cycle gives the headroom. A fleet the
2-core machine cannot hold is not shrunk: the index calls its row "machine-bound" from the CPU the run measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from swarmgauge.cli.demo_pages import Workload, hold_seconds
from swarmgauge.reports.index_grades import samples_needed
from swarmgauge.reports.index_mdk import ACCEPT_TOLERANCE, READ_TOLERANCE, SUMMARY_TOLERANCE
from swarmgauge.reports.index_mdk_reads import GATEWAY_READ_US, WORKER_READ_US

#: Closed-loop readers of the saturation step: the page's harness's 1,000 ("1,000 readers against 10 devices"). Fewer
#: would make the readers the bound (each waits about 0.3 s for its read: 200 readers cap near 600 reads/s at any
#: fleet); where the 2-core machine cannot carry the page's load, the index says "machine-bound" with the CPU.
SATURATION_READERS = 1000
#: The 10-device fleet keeps 200: its page amber is 14 reads timed out of a queue of about 100 a device, and the
#: stand-in's reads queued past its 10 s request timeout keep their device busy, so 1,000 readers time out nearly every
#: read (red); 20 a device x 0.3 s reach the timeout's tail as the page's did (250 timed out 9 %, 200 none to a few).
#: The index marks this fleet's verdict as set by this count.
TEN_DEVICE_READERS = 200

#: One Worker's own time per read it serves (one read at a time, as the page's Node.js Worker on its one core; the
#: index reads ``WORKER_READ_US`` for its rows): more Workers raise the cap. Without it the Python Worker is never the
#: bound (1,276 reads/s on one Worker).
WORKER_READ = f"--worker-read-us {WORKER_READ_US}"
#: The Gateway's time per device read: past one Worker it caps the reads (``GATEWAY_READ_US``, where the index reads it)
GATEWAY_READ = f"--gateway-read-us {GATEWAY_READ_US}"
#: Both read lanes, as every fleet and reads run starts its stand-in
LANES = f"{WORKER_READ} {GATEWAY_READ}"
#: The Worker's collection sweep fitted to the page's one sweep figure, 12.4 s for 5,000 devices on one Worker (2.48 ms
#: a device): 123 reads in flight x 305 ms a read. The stand-in's 100 gave 3.05 ms a device, so 2,000 devices swept in
#: about 7 s with the Python Worker's own overhead, on the page's 0.7 headroom edge where the page's Worker was green.
SWEEP = "--query-concurrency 123"
#: The client's request timeout: a fleet summary reads every device, and 5,000 of them through the Python stand-in
#: took past the default 10 s on a loaded 2-core machine (device reads still time out at the stand-in's 10 s).
CLIENT_TIMEOUT = ("--mdk-timeout", "30")
#: a sample a second: the headroom is the mean of the sampled cycle times, and a short fleet run has few cycles
SAMPLING = ("--sample-interval", "1")
#: A fleet's ID in the run folder -> (devices, Workers, the page's verdict).
FLEETS: dict[str, tuple[int, int, str]] = {
    "fleet-10x1": (10, 1, "amber"),
    "fleet-2000x1": (2000, 1, "green"),
    "fleet-5000x1": (5000, 1, "red"),
    "fleet-2000x4": (2000, 4, "green"),
    "fleet-5000x5": (5000, 5, "green"),
    "fleet-5000x5-ping": (5000, 5, "red"),
}
#: The red 5,000 / 5 run: the page's red came from a health ping that met the burst (chance, as the stand-in's random
#: ping phase). A ping sent in the burst's first 0.9 s waits out the lane's saturation (the 3 s burst and its backlog of
#: about 0.9 s) past its 3 s timeout; pinging every half second makes that meeting certain, so this option sets the red.
PING_IN_BURST = "--health-ping-s 0.5"
#: The green 5,000 / 5 run: a ping sent while the lane is saturated (the burst and its backlog of about a second) misses,
#: so with the Kernel's random ping phase about one run in five turns red by chance, as the page's pair did. The green
#: run's first ping comes after the run: none meets the burst, so this option sets the green, as the other sets the red.
NO_PING_IN_BURST = "--health-phase-s 600"
#: The saturation step's hold where its reads/s are compared with the page's (the 10- and 2,000-device fleets and
#: the 1,000-device pairs): long enough for a steady rate. The 5,000-device fleets, whose reads/s the page does not
#: give, hold the page's own read load, "1000 concurrent closed-loop readers for 3 s": their reads count only in the
#: verdict's rejected and timed out, and a 10 s hold put the 5,000 / 1 Worker's one measured collection sweep under
#: 1,000 readers for most of it (16.7 s, headroom 1.67 against the page's 1.24, measured with no read load).
SATURATION_S = 10
PAGE_READ_LOAD_S = 3
#: A compared saturation step leaves its first second out of its rate: the readers' first reads start all at once
#: and count in the step they started in, 1,000 more than the Workers served in it, so a 2 s step read 1,216 reads/s
#: on one Worker whose lane serves at most about 960, and a 10 s step 1,005 (5 % over what the stand-in served). After
#: a second (one read's time under 1,000 readers, 0.6-1.0 s) each read started answers one served in the step. At
#: scale 1 the warm-up comes on top of the 10 s measured.
SATURATION_WARMUP_S = 1.0
#: Submits the 5,000 / 5 bursts may have in flight: the page's harness fires 1,000/s whatever the Kernel's pace, and
#: the red run needs the full rate to hold the Kernel's lane busy past a ping's 3 s timeout (200 in flight capped it at
#: about 600/s and no ping missed). The other fleets keep 200: 1,000 greenlets on a loaded 2-core machine put seconds
#: of the generator's and the Gateway's own lag into a 10-device fleet's acceptance, which the Kernel answers in ms.
FULL_RATE_USERS = 1000
#: The one-at-a-time step's requests of each kind, sent in turn with one in flight (``--mdk-one-at-a-time-mix``): what
#: the index's p50 figures need at their tolerances by its "few samples" rule (``samples_needed``: 27 reads at +-28 %,
#: 20 summaries at +-33 %, 9 accepts at +-50 %), and two more. The page's rest on 50 each, one request at a time: its
#: device read is the driver's 220-390 ms "in every profile", never queued behind a summary's 2,000 reads on the same
#: Worker (at 2,000 / 1 that queue alone is 2 s), so the kinds share one serial user, as there.
ONE_READS = samples_needed("p50", READ_TOLERANCE) + 2
ONE_ACCEPTS = samples_needed("p50", ACCEPT_TOLERANCE) + 2
GRADED_SUMMARIES = samples_needed("p50", SUMMARY_TOLERANCE) + 2
#: Summaries per fleet: the page gives a figure only at 2,000 devices. At 10 devices a few (0.4 s each), measured only;
#: at 5,000 none (3 to 6 s each; the run's discovery before the load reads the fleet once, no request of the run).
SUMMARIES = {"fleet-2000x1": GRADED_SUMMARIES, "fleet-2000x4": GRADED_SUMMARIES, "fleet-10x1": 3}
OTHER_SUMMARIES = 0
#: Seconds a one-at-a-time request takes, to size the step: a read the mock's 220-390 ms snap and the hops (0.37 s,
#: the slowest fleet's mean on a loaded machine: at 5,000 / 5 the clean-clone run's reads averaged 0.38 s and the
#: step's 10 s, sized at 0.32, sent 26 of the 27 its p50 needs), an accept a lane turn and the hops; a summary reads
#: every device at once, through its Worker's lane (``WORKER_READ``) or at the stand-in's own pace a device where more
#: Workers leave that the bound (1.06 s at 2,000 / 4, 2.82 s at 5,000 / 5), plus one read.
READ_S, ACCEPT_S = 0.37, 0.01
WORKER_READ_S = WORKER_READ_US / 1e6
SUMMARY_S_PER_DEVICE = 0.5e-3
#: The step's time over its requests' planned time: room for a loaded machine's slower requests.
ONE_AT_A_TIME_SLACK = 1.1
#: The throughput pairs not among the fleets (the 2,000-device pair is the fleets' own saturation step).
THROUGHPUT: dict[str, tuple[int, int]] = {"reads-1000x1": (1000, 1), "reads-1000x2": (1000, 2)}
DRILLS = ("worker-restart", "kernel-restart", "device-outage")
#: A restarted Kernel or Worker boots this long before it listens: the real ones are Node.js processes (the page's
#: procedures expect READY "in about 4 to 6 s"); the stand-in's Python process is up in 0.1 s, which would compare
#: its start-up, not MDK's recovery. The index marks READY and the first read as set by this; the gap between them
#: (the re-registration and the first routed read) is the stand-in's own.
RESTART_BOOT_S = 5.0
RESTART_BOOT = f"--restart-boot-s {RESTART_BOOT_S:g}"
#: Below scale 1 the boot shrinks with the scale, never under this: it is the stand-in's setting, which READY and the
#: first read are marked as set by (the index names the boot each drill ran with), and 5 s of it was 8 s of the 0.25
#: plan's two restart drills; the gap after READY, the stand-in's own, is the same at any boot.
LEAST_RESTART_BOOT_S = 1.0
#: The drill's kill comes this long into its reads (``--mdk-drill-after``) at scale 1; it scales like a hold, not
#: under 1 s: the readers have read the victim's devices by then (the drill arms on such a read in any case).
DRILL_AFTER_S = 2.0
#: From the kill's time to the recovery at most on a loaded machine: the drill arms on a good read of the victim
#: (0.2-0.6 s), then the restarts' 5 s boot, the re-registration and the first routed read (READY 5.1-5.3 s, first
#: read 5.4-6.1 s from the kill, load 4-5); the outage's cached channels fail within --cache-s 5, then the mocks
#: come back and a read goes through (0.4 s).
AFTER_BOOT_S = 1.7
#: the outage's recovery: its cached channels fail within the devices' 5 s cache (``--cache-s``), whatever the scale
OUTAGE_RECOVERY_S = 5.0 + AFTER_BOOT_S
#: The readers read on at least this long after the recovery: they see it, and the run's RSS slope has samples past it.
DRILL_READ_ON_S = 1.0
#: A drill's reads at scale 1: the kill, the recovery and 8 s of reads after it.
DRILL_HOLD_S = 15.0
DRILL_DEVICES = 50
SWITCH = {"label": "switch", "users": 0, "duration": "1s"}  # Locust swaps classes only through 0 users
#: The step before the burst, where the burst's users start: its only requests are their connects (``MDK connect``,
#: counted so the run's total is the Gateway's; no graded row reads that name).
DISCOVER_S = 2.0
DISCOVER = {"label": "discover", "users": 1, "duration": f"{DISCOVER_S:g}s", "user_classes": ["MDKBurstUser"]}
BURST = {
    "label": "action burst",
    "rate": 1000,
    "duration": "3s",
    "max_users": 200,
    "drop_after": "1s",
    "user_classes": ["MDKBurstUser"],
}
#: The page's thresholds; ``fail_ratio`` judges the failed requests, so an amber fleet (a few timed-out reads) exits 0
#: and a red one exits 3 (a failed gate) rather than Locust's 1 for any failure. Its requests are every request of the
#: run, the burst users' connects among them (200 a fleet, 1,000 on 5,000 devices / 5 Workers): a failed one counts.
GATES = ["headroom<1", "MDK:action:p99<=2000ms", "mdk_rejected_ratio<0.01", "fail_ratio<0.01"]
RED_EXIT = 3


#: Below scale 1 a drill takes its device ids from the stand-in Kernel's worker list (``--mdk-discover kernel``), not
#: from a summary that reads every device first: its rows time a restart and the reads after it, which no Worker sweep
#: or device-data cache before the load changes (READY 5.15-5.25 s, first read 5.55-5.74 s, the outage's channels
#: 4.03 s, as with the summary), nor the red 5,000 / 5 run, which reads no device (``ping_run_discovery``). A fleet
#: that reads keeps the summary: without its seconds the Workers' sweeps (every 10 s from
#: their start) and the devices' 5 s caches meet a quarter-scale run's 1-3 s steps at other times, and paired runs
#: moved its figures (2,000 / 4 saturation 556 and 849 reads/s against 1,289 and 1,291, though a third pair read 1,190
#: against 1,130; 10 / 1 read p50 328 and 337 ms against 294 and 296; 5,000 / 5 read p50 794 and 937 ms against 299
#: and 325; ``benchmarks/mdk_discovery_pairs.py``). Scale 1 keeps the summary.
DISCOVER_BY_KERNEL = ("--mdk-discover", "kernel")


def drill_discovery(scale: float) -> tuple[str, ...]:
    """The options of a drill's discovery before its load: the Kernel's list below scale 1, the summary at it."""
    return DISCOVER_BY_KERNEL if scale < 1 else ()


def ping_run_discovery(scale: float) -> tuple[str, ...]:
    """The red 5,000 / 5 run's discovery: it reads no device (its burst's submits and the health pings share the
    Kernel's dispatch lane, which reads never take, ``targets/mdk/kernel.py``), so below scale 1 it takes the Kernel's
    list, as the drills do, and not the summary's 5,000 reads (about 3 s of its start-up)."""
    return drill_discovery(scale)


def saturation_readers(devices: int) -> int:
    """The saturation step's readers: the page's 1,000, the 10-device fleet's 200 (``TEN_DEVICE_READERS``)."""
    return TEN_DEVICE_READERS if devices <= 10 else SATURATION_READERS


#: The fleets whose saturation reads/s the index compares with the page's (with the throughput pairs).
RATE_FLEETS = ("fleet-2000x1", "fleet-2000x4")


def saturation_step(fleet: Fleet | None, scale: float) -> dict[str, str]:
    """The saturation step's hold and, where its rate is compared with the page's, its warm-up. A fleet whose
    one-at-a-time step sends summaries may end it with one in flight: its Worker's lane then holds a read of every
    device of that Worker first (2.1 s at 2,000 / 1: in a 2 s step at --scale 0.25 with a 1 s warm-up, no read started
    after it), so its warm-up waits out what of it the switch between them (1 s, no user) left. At least a second is
    measured, and the whole hold from ``SATURATION_S`` up."""
    held = hold_seconds(PAGE_READ_LOAD_S if fleet is not None and fleet.devices >= 5000 else SATURATION_S, scale)
    if fleet is not None and fleet.name not in RATE_FLEETS:
        return {"duration": f"{held:g}s"}
    warmup = SATURATION_WARMUP_S
    if fleet is not None and one_at_a_time_mix(fleet)["summary"]:
        warmup += max(0.0, fleet.devices * WORKER_READ_S / fleet.workers - _seconds_of(SWITCH))
    warmup = float(math.ceil(warmup))
    duration = held + warmup if held >= SATURATION_S else max(held, warmup + 1)
    return {"duration": f"{duration:g}s", "warmup": f"{warmup:g}s"}


def _seconds_of(stage: dict[str, Any]) -> float:
    return float(str(stage["duration"]).rstrip("s"))


def _scaled(seconds: float, scale: float, more: float = 0.0) -> str:
    """A hold stretched by ``scale`` (at least 1 s), plus ``more`` unscaled seconds."""
    return f"{hold_seconds(seconds, scale) + more:g}s"


@dataclass(frozen=True)
class Fleet:
    name: str
    devices: int
    workers: int
    page_verdict: str

    @property
    def profile(self) -> str:
        return f"{self.devices}x{self.workers}"


def fleets() -> list[Fleet]:
    return [Fleet(name, *spec) for name, spec in FLEETS.items()]


def summary_s(devices: int, workers: int, per_device: float = SUMMARY_S_PER_DEVICE) -> float:
    """Seconds a fleet summary takes on the stand-in: every device read at once, through its Worker's lane."""
    return READ_S + devices * max(WORKER_READ_S / workers, per_device)


def one_at_a_time_mix(fleet: Fleet, scale: float = 1.0) -> dict[str, int]:
    """The one-at-a-time step's requests of each kind for this fleet.

    Below scale 1 the reads and accepts shrink with the scale and the summaries with its square (2 of 22 at --scale
    0.25): a 2,000-device summary takes 2.5 s at 2,000 / 1 (seven device reads), and at 0.25 its row is under the 20
    its tolerance needs whichever count the step sends, so the index says "few samples" either way; the third to
    sixth summaries were 9 s of the 2,000 / 1 fleet and 5 s of the 2,000 / 4 one at 0.25."""
    summaries = SUMMARIES.get(fleet.name, OTHER_SUMMARIES)
    mix = {"telemetry": ONE_READS, "action": ONE_ACCEPTS, "summary": summaries}
    if scale >= 1:
        return mix
    shrunk = {kind: math.ceil(count * scale) for kind, count in mix.items()}
    shrunk["summary"] = math.ceil(summaries * scale * scale)
    return shrunk


def one_at_a_time_s(fleet: Fleet, scale: float = 1.0) -> float:
    """Seconds of the one-at-a-time step at ``scale``'s mix: its requests one after another, with slack (the
    fleet's discovery is done before the load, ``locustfiles/mdk_fleet.py``)."""
    mix = one_at_a_time_mix(fleet, scale)
    planned = mix["telemetry"] * READ_S + mix["action"] * ACCEPT_S
    planned += mix["summary"] * summary_s(fleet.devices, fleet.workers)
    return max(1.0, float(round(planned * ONE_AT_A_TIME_SLACK)))


def fleet_plan(fleet: Fleet, scale: float) -> dict[str, Any]:
    """One profile of the page: one-at-a-time requests, saturation reads, the burst (only the burst for the ping run).

    No step waits for the users' device discovery: the run does it at its start-up, before the load
    (``locustfiles/mdk_fleet.py``; a summary of 5,000 devices on one Worker took 5.7 s, 2,000 on four 1.9 s)."""
    burst = {**BURST, "max_users": FULL_RATE_USERS} if fleet.devices == 5000 and fleet.workers == 5 else BURST
    # The burst's users start in the step before it (they submit nothing without a ticket): spawned at the burst's
    # start instead, the tickets of their spawn time came due at once, a bunch of ~200 submits the Kernel's lane (about
    # as fast as 1,000/s) never worked off, so every accept waited ~200 ms; the page's harness submits evenly.
    # Its spawn takes a tenth of the step (``shapes/base.py``): at --scale 0.25 a second spawns 1,000 users in 0.1 s.
    discover = {**DISCOVER, "users": burst["max_users"], "duration": _scaled(DISCOVER_S, scale)}
    if fleet.name == "fleet-5000x5-ping":
        # the drain: the Kernel's queue lasts seconds after the burst, and a SICK Worker comes back at a later ping
        drain = {"label": "drain", "users": 0, "duration": _scaled(4, scale)}
        stages = [discover, burst, drain]
    else:
        one = _scaled(one_at_a_time_s(fleet), scale) if scale >= 1 else f"{one_at_a_time_s(fleet, scale):g}s"
        stages = [
            {"label": "one at a time", "users": 1, "duration": one, "user_classes": ["MDKOneAtATime"]},
            SWITCH,
            {
                "label": "saturation reads",
                "users": saturation_readers(fleet.devices),
                "user_classes": ["MDKReader"],
                **saturation_step(fleet, scale),
            },
            SWITCH,
            discover,
            burst,
        ]
    return {
        "name": f"demo-mdk-{fleet.name}",
        "description": f"the MDK page's {fleet.devices:,} devices / {fleet.workers} Worker profile",
        "kind": "stages",
        "stages": stages,
        "slos": GATES,
    }


def fleet_workload(fleet: Fleet, scale: float) -> Workload:
    embedded = {"fleet-5000x5": NO_PING_IN_BURST, "fleet-5000x5-ping": PING_IN_BURST}.get(fleet.name, "")
    options: tuple[str, ...] = ("--mdk-profile", fleet.profile, *CLIENT_TIMEOUT, *SAMPLING)
    if fleet.name != "fleet-5000x5-ping":  # the ping run is the burst alone
        mix = ",".join(f"{kind}={n}" for kind, n in one_at_a_time_mix(fleet, scale).items())
        options += ("--mdk-one-at-a-time-mix", mix)
    options += ("--mdk-embedded-args", f"{LANES} {SWEEP} {embedded}".strip())
    if fleet.name == "fleet-5000x5-ping":
        options += ping_run_discovery(scale)
    readers = saturation_readers(fleet.devices)
    what = f"{fleet.devices:,} devices / {fleet.workers} Worker(s): one at a time, {readers:,} readers, burst"
    if fleet.name == "fleet-5000x5-ping":
        what = f"5,000 devices / 5 Workers, the burst with a health ping in it ({PING_IN_BURST})"
    # A fleet whose page verdict is red fails its gates by design: its run ends with the failed gate's exit.
    expected = RED_EXIT if fleet.page_verdict == "red" else 0
    return Workload(fleet.name, what, "mdk_fleet.py", options, fleet_plan(fleet, scale), expected_exit=expected)


def throughput_workload(name: str, devices: int, workers: int, scale: float) -> Workload:
    plan = {
        "name": f"demo-mdk-{name}",
        "description": f"saturation reads on {devices:,} devices over {workers} Worker(s)",
        "kind": "stages",
        "stages": [
            {
                "label": "saturation reads",
                "users": SATURATION_READERS,
                "user_classes": ["MDKReader"],
                **saturation_step(None, scale),
            },
        ],
        "slos": ["headroom<1"],
    }
    what = f"{SATURATION_READERS:,} readers on {devices:,} devices / {workers} Worker(s)"
    options = (
        "--mdk-profile",
        f"{devices}x{workers}",
        *CLIENT_TIMEOUT,
        *SAMPLING,
        "--mdk-embedded-args",
        f"{LANES} {SWEEP}",
    )
    return Workload(name, what, "mdk_fleet.py", options, plan)


def drill_after_s(scale: float) -> float:
    """The kill's time into the drill's reads: 2 s at scale 1, scaled, never under 1 s."""
    return hold_seconds(DRILL_AFTER_S, scale)


def restart_boot_s(scale: float) -> float:
    """The restarted Kernel's or Worker's boot: the page's 5 s at scale 1 and above, scaled below it."""
    return max(LEAST_RESTART_BOOT_S, RESTART_BOOT_S * min(1.0, scale))


def drill_recovery_s(name: str, scale: float) -> float:
    """From the kill to the recovery at most: the boot (a restart) or the caches' window (the outage), then the rest."""
    return OUTAGE_RECOVERY_S if name == "device-outage" else restart_boot_s(scale) + AFTER_BOOT_S


def drill_least_s(scale: float, name: str) -> float:
    """A drill's reads at the least: the kill, its recovery and the reads after it, whatever the scale (at --scale
    0.25 a 4 s hold ended before the restarted Worker was READY: 98 % of reads failed and the slope had no data, exit
    3 instead of the drill's declared 1)."""
    return float(math.ceil(drill_after_s(scale) + drill_recovery_s(name, scale) + DRILL_READ_ON_S))


def drill_workload(name: str, scale: float) -> Workload:
    drill_hold = f"{hold_seconds(DRILL_HOLD_S, scale, needs=drill_least_s(scale, name)):g}s"
    plan = {
        "name": f"demo-mdk-{name}",
        "description": f"readers on the fleet while the {name} drill kills and restarts",
        "kind": "stages",
        "stages": [{"label": "reads", "users": 20, "duration": drill_hold, "user_classes": ["MDKReader"]}],
    }
    options: tuple[str, ...] = (
        "--mdk-profile",
        f"{DRILL_DEVICES}x1",
        "--mdk-drill",
        name,
        "--mdk-drill-after",
        f"{drill_after_s(scale):g}s",
    )
    if name != "device-outage":  # the mocks are devices, not MDK processes: they come back at once
        options += ("--mdk-embedded-args", f"--restart-boot-s {restart_boot_s(scale):g}")
    options += drill_discovery(scale)
    # the readers' reads of the killed or unreachable devices fail until recovery: Locust's exit 1 for failed requests
    return Workload(name, f"the {name} drill under 20 readers", "mdk_fleet.py", options, plan, expected_exit=1)


def workloads(scale: float) -> tuple[Workload, ...]:
    """Every MDK workload of the demo, fleets first."""
    return (
        *(fleet_workload(fleet, scale) for fleet in fleets()),
        *(throughput_workload(name, d, w, scale) for name, (d, w) in THROUGHPUT.items()),
        *(drill_workload(name, scale) for name in DRILLS),
    )
