"""The MDK index section's notes: why its rows read as they do, and what the stand-in is, in words a reader needs
beside the tables (``reports/index_mdk.py`` appends them)."""

from __future__ import annotations

from swarmgauge.reports.index_mdk_reads import GATEWAY_READ_US, GATEWAY_READS_PER_S, LANE_READS_PER_S, WORKER_READ_US

WHY_ROWS = (
    "Why rows read as they do. One at a time: device reads, single accepts and fleet summaries take turns in one "
    "serial user, as the page's \"one request at a time\" (its reads are the driver's 220-390 ms in every profile, "
    "never queued behind a summary's 2,000 reads on the same Worker), each kind sent what its row's tolerance needs "
    "(15 reads, 5 accepts, 11 summaries at 2,000 devices); at 5,000 devices only the users' discovery reads the "
    "fleet, its time shown apart; a row the step sent nothing for (a discovery that outlasted it) is red. "
    'Fleet summary: the page prints one figure, "about 1.3 s at p50" at 2,000 devices, '
    "and names no Worker count; a summary is 2,000 parallel device reads (the harness's route: every device's "
    "metrics pulled at once through the Kernel, the snap channel live, nothing cached), so the page's own read "
    "rates put its 1.3 s on the 4-Worker site (2,000 reads at 1,766 reads/s + one read: 1.4 s) and one Worker's "
    "at about 2.3 s (994 reads/s): 2,000 / 4 is graded against 1.3 s, 2,000 / 1 against the derived 2.3 s, "
    "shown as derived and set by the Worker lane fitted to 994 reads/s. 5,000 / 1 headroom: the page's is the "
    "mean of its harness's sweeps over the Worker's devices, measured in their own checklist step with no read "
    "load; the stand-in's is its Worker's collection sweep, and the one sweep that ends inside the run at 5,000 "
    "devices shares its devices' locks, the mocks and the Worker's CPU with the one-at-a-time summaries (5,000 "
    "reads each) and the saturation readers: under 10 s of 1,000 readers it took 16.7 s (1.67), the sweep before "
    "it, under the summaries only, 14.2 s (1.42); the 5,000-device fleets now hold the page's own 3 s read load, "
    "and a sweep with no load at all would need ~13 s more of the run. Acceptance under the burst: one lane model "
    "for every fleet (the stand-in text says what it is): at 2,000 devices its turn, 1.02 ms, is just short of the "
    "1 ms between submits, so evenly paced submits queue slowly, tens of ms at p50 as the page; at 5,000, 1.28 ms, "
    "hundreds. At 1,000 devices the same lane keeps up (0.93 ms: a few ms), where the page says tens of ms from "
    "1,000 devices up; no fleet here has a burst at 1,000 devices, and a line through 1,000 and 2,000 both inside "
    "tens of ms would give 5,000 under 370 ms. A burst in which the generator stalled is shown machine-bound with "
    "the stall, and the Kernel's own accept p50 is in the table of figures measured here. At 5,000 / 5 the lane "
    "saturates, so the Kernel's own acceptance is the model's: an accept p50 or p99 (or a red verdict from the "
    "action p99 alone) that misses where the Kernel's own figure holds is shown machine-bound with both, the "
    "difference being the generator's and the Gateway's lag on the 2 cores (the page's harness called the Kernel "
    "directly). Saturation reads: one Worker's rate is its lane's setting (about "
    f"{LANE_READS_PER_S} reads/s, fitted to the page's 926 and 994); past one Worker the Gateway's lane caps every "
    f"Worker's reads together (about {GATEWAY_READS_PER_S:,} reads/s), fitted between the page's 1,479 at 2 Workers "
    "and 1,766 at 4, as the page names no cause past one Worker. Without it that rate was what the stand-in got of "
    "the 2 cores and moved with the host's speed (1,537 to 2,312 reads/s at 2,000 / 4 over four runs). Where the "
    "machine cannot reach a cap, the row says machine-bound with the CPU the page's rate would need."
)
STAND_IN = (
    "The MDK stand-in (Kernel, Gateway, Workers and CGMiner mocks as Python processes) at each of the page's fleet "
    "sizes on this 2-core machine; the page's per-profile tables are not in the copy we have, so its text's "
    "figures and verdicts are the reference. The Kernel's acceptance is a model, set by the stand-in: commands and "
    "health pings take turns on one FIFO dispatch lane, a turn 0.845 ms + 0.087 us a device + 0.02 us a command in "
    "the Kernel (--accept-base-us 845 --accept-us-per-device 0.087 --accept-us-per-inflight 0.02), the time waited "
    "for it is slept, not spent as CPU; a single command waits one turn, and a 3 s burst at 1,000 submits/s waits "
    "1,500 x a turn's excess over 1 ms at its median. Reads take turns the same way on each Worker's lane "
    f"(--worker-read-us {WORKER_READ_US}) and on the Gateway's one lane for every Worker (--gateway-read-us "
    f"{GATEWAY_READ_US}). A fleet or figure marked machine-bound is shown, not judged: "
    "its ratio column says machine-bound where the generator and the stand-in together filled the 2 cores (or others "
    "did), so the machine's limit is never read as the page's shape failing."
)

#: Why the 10-device fleet's verdict cannot hold the page's amber here, from the page's own figures and the queue
#: model ``benchmarks/mdk_ten_device_timeouts.py`` (its harness's read load: 1,000 closed-loop readers for 3 s, each
#: read of a random device, then every read in flight awaited; reads of a device one after another at 220-390 ms).
TEN_DEVICE_WHY = (
    "the page's 14 timed-out reads of about 1,090 (1,000 readers for 3 s on 10 devices: about 100 reads a device "
    "at 220-390 ms, a ~30 s queue) put its request timeout at the end of its devices' queues, where chance decides: "
    "with reads of random devices, the same queue times out 771 reads at the device's 10 s timeout and 105 at the "
    "Kernel's 30 s channel timeout (red), and the best-fitting timeout, 34 s, gives amber in only 83 % of runs "
    "(89 % if a device skips a read whose caller has gone; benchmarks/mdk_ten_device_timeouts.py); the stand-in "
    "keeps 200 readers, at which none to a few time out"
)
