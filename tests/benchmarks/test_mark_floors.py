"""benchmarks/mark_floors.py: each floor case runs, records and reports; a UDP echo peer that never names its port
is a BenchmarkError, not a hang. Structure and counts only, never a figure."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import mark_floors
from benchmarks.mark_client_cases import BenchmarkError, Window

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _opts(users: int = 2) -> argparse.Namespace:
    return argparse.Namespace(users=users, warmup=0.2, duration=0.5, corpus=4)


def test_the_locust_floor_counts_one_request_per_task():
    result = mark_floors.run_locust_floor(_opts(), Window(None))
    assert result["requests"] > 0 and result["failures"] == 0 and result["cpu_us_per_fetch"] > 0


def test_the_udp_floor_round_trips_through_a_peer_in_another_process():
    result = mark_floors.run_udp_floor(_opts(), Window(None))
    assert result["requests"] > 0 and result["failures"] == 0
    assert result["server_cpu_us_per_fetch"] is not None  # the echo peer's CPU, as the server's is elsewhere


def test_an_echo_peer_that_names_no_port_is_a_benchmark_error(monkeypatch):
    monkeypatch.setattr(mark_floors, "ECHO_PEER", "print('no port here')")
    with pytest.raises(BenchmarkError, match="named no port"):
        mark_floors.run_udp_floor(_opts(), Window(None))
