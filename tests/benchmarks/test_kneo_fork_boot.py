"""The fork-boot benchmark's medians and its side-by-side table (no kneo-serv started here)."""

from __future__ import annotations

from benchmarks.kneo_fork_boot import summary, table


def test_medians_per_case_and_one_line_per_store_and_count_with_what_fork_saves():
    runs = {
        "sqlite 2 fork": [
            {"boot_s": 1.0, "service_s": 1.0},
            {"boot_s": 1.4, "service_s": 1.4},
            {"boot_s": 1.2, "service_s": 1.2},
        ],
        "sqlite 2 exec": [{"boot_s": 3.0, "service_s": 3.0}],
        "postgres 8 fork": [{"boot_s": 2.0, "service_s": 1.5}],
        "postgres 8 exec": [{"boot_s": 9.0, "service_s": 8.0}],
    }
    medians = summary(runs)
    assert medians["sqlite 2 fork"] == {"boot_s": 1.2, "service_s": 1.2}
    lines = table(medians).splitlines()
    assert [line.split()[:2] for line in lines[1:]] == [["postgres", "8"], ["sqlite", "2"]]
    assert lines[1].split()[2:] == ["2.00", "9.00", "7.00"] and lines[2].split()[-1] == "1.80"
