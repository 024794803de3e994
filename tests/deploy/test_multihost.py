"""The distributed run as on real hosts (issue 33, point 1): four network namespaces joined by veth links to a
bridge, the master on one, two workers on two others, the target on the fourth, a stepped plan across them.

Then the faults a real network has: a worker's cable pulled mid-step (for less than its ``--master-lost-after``: it
is reported lost and comes back; for longer: it stops, and a worker started again on that host joins the run), and
the master's host killed (SIGKILL: the workers stop within seconds). Load goes only to the target's namespace
address. Needs root (CAP_NET_ADMIN) and iproute2; skips with the reason elsewhere, and fails instead of skipping
where ``SWARMGAUGE_REQUIRE_NETNS`` is set (``.ci/run`` sets it as root).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from tests.deploy.multihost import MASTER_PORT, Cluster, by_process, wait_for
from tests.deploy.netns_hosts import REQUIRE_ENV, HostNetwork, unavailable_reason
from tests.listeners.sim_run import locust_command, read_steps

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

STEP_S = 8


def _plan(steps: list[int], step_s: int) -> str:
    return f"name: hosts\nkind: step_ramp\nsteps: {steps}\nstep_time: {step_s}s\nwarmup: 0s\n"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {reason}")
        pytest.skip(reason)
    with HostNetwork(["master", "worker-b", "worker-c", "target"]) as net:
        yield Cluster(net, tmp_path)


def _aggregated(cluster: Cluster) -> list[dict[str, str]]:
    return [row for row in read_steps(cluster.run_dir) if row["name"] == "Aggregated"]


def test_a_stepped_plan_across_four_hosts_counts_what_the_target_served(cluster: Cluster):
    cluster.start(_plan([2, 4, 6], 4), master_args=("--no-report",))
    assert cluster.finish() == 0, cluster.log("master")[-3000:]
    records = cluster.records()

    rows = _aggregated(cluster)
    assert [int(r["users"]) for r in rows] == [2, 4, 6]
    assert [int(r["workers"]) for r in rows] == [2, 2, 2]
    assert sum(int(r["requests"]) for r in rows) == len(records) > 0, "steps.csv holds exactly what the target served"
    for worker in cluster.workers.values():
        assert by_process(records, worker), "each worker's host sent load over its own link"
    assert cluster.run_info()["workers"] == 2 and cluster.run_info()["lost_workers"] == []


def test_a_worker_cut_off_mid_step_is_reported_lost_then_rejoins_with_nothing_it_measured_lost(cluster: Cluster):
    # worker-b outlives the cut (its own give-up time is longer than the cut), so its link returns to a live worker
    cluster.start(_plan([2, 4, 6], STEP_S), {"worker-b": ("--master-lost-after", "40")})
    cluster.wait_for_users(4)
    time.sleep(1)
    cluster.net.cut("worker-b")
    cut_at = time.time()
    wait_for(lambda: " lost (last heard from" in cluster.log("master"), 20, "the master to report worker-b lost")
    cluster.net.restore("worker-b")
    restored_at = time.time()
    assert cluster.finish() == 0, cluster.log("master")[-3000:]
    records = cluster.records()
    victim, survivor = cluster.workers["worker-b"], cluster.workers["worker-c"]
    assert victim.wait(timeout=30) == 0, cluster.log("worker-b")[-3000:]

    master_log = cluster.log("master")
    assert "self-healed with heartbeat" in master_log, "Locust's master re-admits the worker on its first heartbeat"
    [lost] = cluster.run_info()["lost_workers"]
    assert lost["worker"] in master_log and lost["step"] == 1
    assert lost["last_seen"] <= cut_at + 0.5 < lost["noticed_at"] < restored_at + 1
    assert lost["rejoined_at"] is not None and lost["rejoined_at"] >= restored_at
    reported_when_lost = sum(lost["requests_reported_when_lost"].values())
    reported = sum(lost["requests_reported"].values())
    assert 0 < reported_when_lost < reported == len(by_process(records, victim)), "its queued reports all arrived"
    assert [e["index"] for e in cluster.run_info()["steps"]] == [0, 1, 2], "the run went on to the end of the plan"
    during_cut = [r for r in by_process(records, survivor) if cut_at + 1 < r["t"] < restored_at]
    assert during_cut, "the other worker went on loading while worker-b was cut off"
    assert [r for r in by_process(records, victim) if r["t"] > restored_at + 1], "worker-b loads again once back"

    rows = _aggregated(cluster)
    assert sum(int(r["requests"]) for r in rows) == len(records), "nothing worker-b measured is missing"
    assert "1 of them came back" in (resolve(cluster.run_dir) / "report.md").read_text()


def test_a_worker_cut_off_longer_than_master_lost_after_stops_and_a_new_one_on_that_host_joins(cluster: Cluster):
    # a fourth step: Locust gives a worker that joins mid-step users at once only when no dispatch is under way
    # (else at the next step change), and the dead worker's late bytes can start one
    # --stop-timeout 2: how long the given-up worker waits for its users stuck on the dead link
    cluster.start(
        _plan([2, 4, 6, 8], STEP_S), {"worker-b": ("--master-lost-after", "3")}, ("--no-report", "--stop-timeout", "2")
    )
    cluster.wait_for_users(4)
    time.sleep(1)
    cluster.net.cut("worker-b")
    cut_at = time.time()
    victim, survivor = cluster.workers["worker-b"], cluster.workers["worker-c"]
    victim.wait(timeout=30)
    gone_after = time.time() - cut_at
    wait_for(lambda: " lost (last heard from" in cluster.log("master"), 20, "the master to report worker-b lost")
    cluster.net.restore("worker-b")
    restored_at = time.time()
    replacement = cluster.start_worker("worker-b", log_name="worker-b-again")
    code = cluster.finish()
    # the given-up worker's users stuck on the dead link are recorded Unfinished (failures no SLO judged: exit 1)
    unfinished = sum(int(row.get("unfinished") or 0) for row in _aggregated(cluster))
    assert code == (1 if unfinished else 0), cluster.log("master")[-3000:]
    records = cluster.records()

    victim_log = cluster.log("worker-b")
    assert victim.returncode == 1 and gone_after < 20, victim_log[-3000:]
    assert (
        victim_log.count(f"lost the master at {cluster.net['master'].address}:") == 1 and "Traceback" not in victim_log
    )
    # The dead worker's last bytes (a heartbeat, reports, perhaps its quit) sat in its host's kernel while the cable
    # was out; the restored link delivers them, and Locust's master takes the heartbeat for a return ("self-healed")
    # until the quit or the next silence. So it may read as back, or be lost twice: the counts hold either way.
    lost = cluster.run_info()["lost_workers"]
    assert len({entry["worker"] for entry in lost}) == 1 and lost[0]["step"] == 1, lost
    reported = sum(lost[-1]["requests_reported"].values())
    assert reported == lost[-1]["locust_requests_reported"] > 0
    assert reported <= len(by_process(records, victim)), "at most what the target served it (some never answered)"
    new_records = by_process(records, replacement)
    assert new_records and min(r["t"] for r in new_records) >= restored_at, "the new worker on that host took users"

    rows = _aggregated(cluster)
    in_steps = sum(int(r["requests"]) for r in rows)
    assert in_steps == reported + len(by_process(records, survivor)) + len(new_records), (
        "the steps hold all the others sent and every request the lost worker reported"
    )
    assert int(rows[3]["workers"]) >= 2, "the last step ran on the survivor and the new worker"
    folders = [p.name for p in cluster.run_dir.iterdir() if p.is_dir() and not p.is_symlink()]
    assert len(folders) == 1, f"the joining worker opened no run folder of its own: {folders}"
    assert cluster.run_info()["workers"] >= 2


def test_the_workers_stop_within_seconds_when_the_master_is_killed(cluster: Cluster):
    cluster.start(_plan([2, 4], 120))
    cluster.wait_for_start()
    wait_for(lambda: all(by_process(cluster.records(), w) for w in cluster.workers.values()), 30, "both load")
    assert cluster.master is not None
    cluster.master.send_signal(signal.SIGKILL)
    killed_at = time.time()
    for worker in cluster.workers.values():
        worker.wait(timeout=60)
    gone_after = time.time() - killed_at
    records = cluster.records()

    assert gone_after < 20, f"Locust alone loads on for 60 s; the workers took {gone_after:.0f} s"
    for host, worker in cluster.workers.items():
        log = cluster.log(host)
        assert worker.returncode == 1, log[-3000:]
        errors = [line for line in log.splitlines() if "/ERROR/" in line or "/CRITICAL/" in line]
        assert len(errors) == 1 and f"lost the master at {cluster.net['master'].address}:" in errors[0], log[-3000:]
        assert "Traceback" not in log
    assert max(r["t"] for r in records) < killed_at + 20, "no load after the workers stopped"


CLUSTER_LOCUSTFILE = Path(__file__).resolve().parents[1] / "listeners" / "cluster_locustfile.py"
TOKEN = "SGTOKNETNS7"


def test_a_rogue_on_another_host_gets_nothing_from_a_keyed_master_and_a_worker_with_the_key_runs(
    cluster: Cluster, tmp_path: Path
):
    """Issue 33 point 2 across hosts: the master (with a secret and a cluster key) listens on its namespace's
    address; a rogue worker on another host gets not one message, a worker on a third host with the key (and its own
    token) runs the load, and neither the key nor the token is in the master's log or run.json."""
    key = tmp_path / "cluster.key"
    key.write_text("the multi-host test's shared key, 32 bytes\n")
    key.chmod(0o600)
    cluster.start_target()
    address = cluster.net["master"].address
    cluster.master = cluster.net.start(
        "master",
        locust_command(
            CLUSTER_LOCUSTFILE,
            "--headless",
            "--master",
            "--master-bind-host",
            address,
            "--master-bind-port",
            str(MASTER_PORT),
            "--expect-workers",
            "1",
            "--expect-workers-max-wait",
            "60",
            "--host",
            cluster.target_url,
            "--steps",
            "1",
            "--step-time",
            "3",
            "--mark-token",
            TOKEN,
            "--cluster-key-file",
            str(key),
            "--run-dir",
            str(cluster.run_dir),
        ),
        cluster.log_path("master"),
    )
    wait_for(lambda: "listens for workers on" in cluster.log("master"), 60, "the master to listen")
    rogue = cluster.net.run(
        "worker-b", [sys.executable, "-m", "tests.listeners.rogue_worker", address, str(MASTER_PORT), "6"], timeout=60
    )
    worker = cluster.net.start(
        "worker-c",
        locust_command(
            CLUSTER_LOCUSTFILE,
            "--worker",
            "--master-host",
            address,
            "--master-port",
            str(MASTER_PORT),
            "--cluster-key-file",
            str(key),
        ),
        cluster.log_path("worker-c"),
        env={"LOCUST_MARK_TOKEN": TOKEN},
    )
    assert cluster.finish() == 0, cluster.log("master")[-3000:]
    assert worker.wait(timeout=30) == 0, cluster.log("worker-c")[-3000:]

    assert rogue == "", "no ack, no spawn, no heartbeat reached the rogue host"
    master_log = cluster.log("master")
    assert "refused a worker connection" in master_log and "does not hold the cluster key" in master_log
    requests = sum(int(row["requests"]) for row in _aggregated(cluster))
    assert requests == len(cluster.records()) > 0, "the keyed worker on its own host ran the load"
    run_json = (resolve(cluster.run_dir) / "run.json").read_text()
    for secret in (TOKEN, key.read_text().strip()):
        assert secret not in master_log + cluster.log("worker-c") + run_json
