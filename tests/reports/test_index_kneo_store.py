"""The kneo page's PostgreSQL against SQLite rows over hand-made run folders: each store on as many service
processes as the other, which side bounds each ratio (its store or kneo-serv's CPU), and a ratio graded where a side
held by its CPU cannot bring it back within the page's tolerance."""

from __future__ import annotations

from swarmgauge.reports.index_figures import PageSection
from swarmgauge.reports.index_grades import AMBER, RED, grade_table
from swarmgauge.reports.index_kneo_store import bound_text, pair_at, store_rows
from tests.reports.test_index_kneo_rows import store_runs, table

AT_1 = "PostgreSQL ÷ SQLite runs/s at 1 (1 service process)"
AT_8 = "PostgreSQL ÷ SQLite runs/s at 8 (2 service processes)"
#: the baseline's figures: one process at 83-87 % of a core on either store, PostgreSQL's two at 68 % each, SQLite's
#: two at 40 % each
HELD = {"sqlite-sync": 85.0, "postgres-sync": 83.0, "postgres-x2-sync": 136.0, "sqlite-x2-sync": 80.0}


def graded(tmp_path, cpu, sqlite_x2=42.0):
    section = PageSection()
    store_rows(store_runs(tmp_path, cpu, sqlite_x2), section, cores=2)
    result = grade_table(table(section, "PostgreSQL against SQLite"))
    return section, dict(zip(result.table["figure"], result.grades)), result.table.set_index("figure")


def test_each_ratio_compares_the_stores_on_as_many_service_processes_as_each_other():
    found = {("sqlite-sync", 1): 1, ("postgres-sync", 1): 1, ("sqlite-sync", 8): 1, ("postgres-x2-sync", 8): 1}
    assert pair_at(found, 1) == (1, "sqlite-sync", "postgres-sync")
    assert pair_at(found, 8) is None  # PostgreSQL over two processes is not set against SQLite over one
    found[("sqlite-x2-sync", 8)] = 1
    assert pair_at(found, 8) == (2, "sqlite-x2-sync", "postgres-x2-sync")


def test_where_both_sides_compute_longer_than_they_wait_the_ratio_is_machine_bound_and_says_which(tmp_path):
    section, grades, rows = graded(tmp_path, {**HELD, "sqlite-x2-sync": 150.0}, sqlite_x2=60.0)
    assert grades[AT_1] == grades[AT_8] == "machine-bound"
    assert rows.loc[AT_1, "x"] == "machine-bound" and rows.loc[AT_1, "measured"] == "1.00"
    assert rows.loc[AT_8, "bound by"].startswith(
        "machine-bound: SQLite: kneo-serv 75 % of a core in each of 2 processes, a run computing longer than it "
        "waits; PostgreSQL: kneo-serv 68 % of a core in each of 2 processes"
    )
    assert any(c.text.endswith("(page: 1.54x), machine-bound") for c in section.checks)


def test_postgres_held_by_its_cpu_above_the_pages_ratio_is_graded_the_ratio_a_floor_of_the_stores(tmp_path):
    """SQLite's two processes wait on the file's lock (40 % of a core each) while PostgreSQL's compute (68 % each):
    PostgreSQL's store would go faster, so 73 / 37 = 1.97 is the least the stores' ratio is, past the page's 1.54."""
    section, grades, rows = graded(tmp_path, HELD, sqlite_x2=37.0)
    assert grades[AT_8] == RED and rows.loc[AT_8, "measured"] == "1.97"
    assert rows.loc[AT_8, "bound by"] == (
        "SQLite: its store, kneo-serv 40 % of a core in each of 2 processes, a run waiting longer than it computes; "
        "PostgreSQL: kneo-serv 68 % of a core in each of 2 processes, a run computing longer than it waits: "
        "PostgreSQL held below its store's rate, so the stores' ratio is at least 1.97, above the page's 1.54 "
        "whatever kneo-serv's CPU"
    )
    assert not any(c.text.endswith("machine-bound") for c in section.checks if "at 8" in c.text)
    note = next(n for n in section.notes if n.startswith("A second service process at 8 concurrent"))
    assert (
        "SQLite from 42 to 37 runs/s, kneo-serv 40 % of a core in each" in note and "PostgreSQL from 32 to 73" in note
    )


def test_postgres_held_by_its_cpu_within_the_pages_ratio_stays_machine_bound(tmp_path):
    # 73 / 50 = 1.46: within the tolerance now, and PostgreSQL's store could take it past
    _, grades, rows = graded(tmp_path, HELD, sqlite_x2=50.0)
    assert grades[AT_8] == "machine-bound" and rows.loc[AT_8, "bound by"].startswith("machine-bound: SQLite: its store")


def test_a_store_ratio_where_kneo_serv_waits_longer_than_it_computes_is_graded(tmp_path):
    cpu = {"sqlite-sync": 40.0, "postgres-sync": 40.0, "postgres-x2-sync": 60.0, "sqlite-x2-sync": 60.0}
    _, grades, rows = graded(tmp_path, cpu)
    assert grades[AT_1] == RED  # 1.00 against 1.55
    assert grades[AT_8] == AMBER  # 73 / 42 = 1.74 against 1.54
    assert rows.loc[AT_8, "bound by"].startswith("the stores: SQLite: its store, kneo-serv 30 % of a core in each")


def test_sqlite_held_by_its_cpu_below_the_pages_ratio_is_graded_the_ratio_a_ceiling_of_the_stores():
    text, graded_row = bound_text(
        1.2, 1.54, {"SQLite": "kneo-serv 80 % of a core (1 process)", "PostgreSQL": "its store, kneo-serv 30 %"}
    )
    assert graded_row and text.endswith(
        "the stores' ratio is at most 1.20, below the page's 1.54 whatever kneo-serv's CPU"
    )
    assert not bound_text(1.6, 1.54, {"SQLite": "kneo-serv 80 %", "PostgreSQL": "its store"})[1]
