"""benchmarks/mark_client.py on a tiny run against the real reference server: every case, the ratios, the profile
and the JSON's fields. Structure and counts only, never a figure."""

from __future__ import annotations

import json

import pytest

from benchmarks import mark_client
from benchmarks.mark_client_cases import part_of, percentile
from benchmarks.mark_client_table import HEADER

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CASE_FIELDS = {
    "client",
    "engine",
    "connection",
    "users",
    "pace",
    "requests",
    "failures",
    "seconds",
    "req_per_s",
    "cpu_us_per_fetch",
    "cpu_use",
    "sys_share",
    "p50_ms",
    "p99_ms",
    "server_cpu_us_per_fetch",
    "load_average",
}


def test_tiny_run_writes_every_case_ratio_and_the_profile(tmp_path, capsys):
    out = tmp_path / "mark_client.json"
    # 2.5 s windows: aioquic's own asyncio client (the reference row, left unmodified) waits about 0.8 s on each
    # handshake against the qh3 server (its 4 key shares; see benchmarks/results/mark_client.txt), so a 1 s window
    # on a busy machine could hold no fresh FETCH at all.
    code = mark_client.main(
        [
            "--duration",
            "2.5",
            "--warmup",
            "0.3",
            "--users",
            "2",
            "--corpus",
            "12",
            "--rounds",
            "1",
            "--profiler",
            "cprofile",
            "--engines",
            "qh3",
            "--scaling",
            "2,3",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert printed.splitlines()[0] == "| " + " | ".join(HEADER) + " |"
    doc = json.loads(out.read_text())
    assert [(c["client"], c["engine"], c["connection"], c["users"], bool(c["pace"])) for c in doc["cases"]] == [
        ("locust", "qh3", "pooled", 2, False),
        ("locust", "qh3", "fresh", 2, False),
        ("memory", "qh3", "pooled", 1, False),
        ("memory", "qh3", "fresh", 1, False),
        ("asyncio", "aioquic", "pooled", 2, False),
        ("asyncio", "aioquic", "fresh", 2, False),
        ("locust-floor", None, "pooled", 2, False),
        ("udp-floor", None, "pooled", 2, False),
        ("fasthttp", None, "pooled", 2, False),
        ("locust", "qh3", "pooled", 2, True),
        ("locust", "qh3", "pooled", 3, True),
    ]
    for case in doc["cases"]:
        assert set(case) >= CASE_FIELDS
        if (case["client"], case["connection"]) == ("asyncio", "fresh"):
            # aioquic's own client, the unmodified reference row: ~0.8 s a handshake against the qh3 server, and on a
            # loaded CI machine its few handshakes in a 2.5 s window may all time out. Ours is the case running and
            # recording what happened (its figure is then a row of failures, which the table shows as such).
            assert case["requests"] + case["failures"] > 0, {k: case[k] for k in ("requests", "failures", "errors")}
            continue
        assert case["requests"] > 0 and case["failures"] == 0 and not case["errors"], case
    by_client = {(c["client"], c["connection"]): c for c in doc["cases"]}
    assert by_client[("asyncio", "pooled")]["reference_bytes"]["mismatches"] == 0
    assert by_client[("asyncio", "pooled")]["reference_bytes"]["answers"] > 0
    assert by_client[("memory", "fresh")]["handshake_cpu_us"] > 0
    assert by_client[("memory", "pooled")]["cpu_us_per_fetch_paced"] > 0
    assert {
        "qh3:pooled_over_memory@2",
        "qh3:pooled_over_asyncio@2",
        "qh3:fresh_over_memory@2",
        "qh3:memory_handshake_cpu_us",
        "qh3:connection_cpu_us@2",
        "qh3:floor_sum_cpu_us@2",
        "qh3:pooled_over_floor_sum@2",
        "qh3:pooled_own_cpu_us@2",
        "qh3:pooled_over_paced_memory@1",
        "scaling:kib_per_connection@2",
        "scaling:kib_per_added_connection@3",
        "fasthttp_cpu_us@2",
        "qh3:pooled_over_fasthttp@2",
    } <= set(doc["ratios"])
    assert doc["ratios"]["qh3:pooled_over_fasthttp@2"] > 0  # the anchor: Locust's FastHttpUser GET on nginx
    assert len(doc["load_average"]) == 3
    assert doc["ratios"]["qh3:pooled_over_memory@2"] > 0
    assert doc["ratios"]["qh3:floor_sum_cpu_us@2"] > 0
    assert doc["cases"][-1]["generator_kib_per_connection"] is not None
    profile = doc["profile"]
    assert profile["profiler"] == "cprofile" and 0 < len(profile["top"]) <= 15
    assert abs(sum(profile["by_part"].values()) - 1.0) < 0.01 and {"aioquic", "qh3"} & set(profile["by_part"])
    assert doc["profile_case"]["client"] == "locust" and doc["profile_case"]["engine"] == "qh3"
    assert doc["profile_case"]["requests"] > 0
    assert doc["settings"]["users"] == [2] and doc["machine"]["cpus"] >= 1 and doc["goals"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--users", "0"],
        ["--users", "one"],
        ["--duration", "0"],
        ["--corpus", "0"],
        ["--rounds", "0"],
        ["--engines", "quiche"],
        ["--scaling", "0"],
        ["--scaling-pace", "nan"],
    ],
)
def test_bad_options_are_refused_in_one_line(argv, capsys):
    assert mark_client.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mark_client: ")


def test_each_case_reports_its_median_round_with_every_round_beside_it():
    rounds = [
        {"cpu_us_per_fetch": 590.0, "p50_ms": 1.2},
        {"cpu_us_per_fetch": 430.0, "p50_ms": 0.9},
        {"cpu_us_per_fetch": 445.0, "p50_ms": 0.8},
    ]
    chosen = mark_client.median_round(rounds)
    assert chosen["cpu_us_per_fetch"] == 445.0 and chosen["p50_ms"] == 0.8
    assert chosen["rounds_cpu_us_per_fetch"] == [590.0, 430.0, 445.0]


def test_percentile_is_nearest_rank():
    ordered = [float(n) for n in range(1, 101)]
    assert (percentile(ordered, 0.5), percentile(ordered, 0.99), percentile([], 0.5)) == (50.0, 99.0, None)


def test_parts_follow_the_frame_file():
    assert part_of("QuicConnection.receive_datagram (aioquic/quic/connection.py:753)") == "aioquic"
    assert part_of("{method 'receive_datagram' of 'qh3._hazmat.QuicConnectionCore' objects}") == "qh3"
    assert part_of("SocketMixin.send (gevent/_socketcommon.py:712)") == "syscalls"
    assert part_of("QuicDriver._run (swarmgauge/quic/driver.py:258)") == "swarmgauge"
    assert part_of("Qh3Engine.datagrams_to_send (swarmgauge/quic/engine.py:251)") == "swarmgauge"
    assert part_of("adjust_request (swarmgauge/core/intended.py:88)") == "swarmgauge"
    assert part_of("Hub.run (gevent/hub.py:631)") == "gevent/greenlet"
