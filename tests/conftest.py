"""Suite-wide set-up: gevent's monkey patching must happen before anything imports ssl; shared fixtures.

Locust patches at import; several modules under test (MCP, kneo, the HTTP users) import ssl through urllib3 or
anyio, so the patch is done here, first, exactly as the ``locust`` command does it.
"""

import os
import weakref
from pathlib import Path

import locust.runners  # the import of locust patches the standard library
import pytest

from swarmgauge.targets.kneo import NoSuitablePython, ensure_venv, find_python
from swarmgauge.targets.postgres import PostgresCluster, PostgresError, find_bindir
from tests.xdist_native import keep_execnet_native

keep_execnet_native()


#: kneo-serv's working folder (its SQLite store) as it lands in the repository when one runs with its cwd there
KNEO_IN_REPOSITORY = Path(__file__).resolve().parents[1] / ".kneo"


@pytest.fixture(autouse=True)
def no_kneo_folder_left_in_the_repository():
    """A ``.kneo/`` store appeared once in the repository's root during a test run (and was committed): the test
    that writes one fails by name instead. Checked only while the root has none (one left there is no test's)."""
    before = KNEO_IN_REPOSITORY.exists()
    yield
    if not before and KNEO_IN_REPOSITORY.exists():
        pytest.fail(
            f"{KNEO_IN_REPOSITORY} appeared during this test (or one beside it on another xdist worker): a kneo-serv "
            "ran with the repository as its working folder"
        )


#: every Locust runner the tests made, so a test that leaves its users running is named (test instrumentation: the
#: runner is unchanged, only remembered)
_RUNNERS: weakref.WeakSet = weakref.WeakSet()
_runner_init = locust.runners.Runner.__init__


def _remembered_runner_init(self, environment) -> None:
    _runner_init(self, environment)
    _RUNNERS.add(self)


locust.runners.Runner.__init__ = _remembered_runner_init  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def no_locust_users_left_running():
    """A test's Locust users still running after it: one such user (a worker test's spawn after ``quit()``) spun on
    a later test's patched sleep in the same process and starved its hub past a 10 s timeout. The test that leaves
    them fails by name; they are killed first, so no later test meets them."""
    before = set(_RUNNERS)
    yield
    left = [runner for runner in _RUNNERS if runner not in before and len(runner.user_greenlets)]
    if left:
        users = sum(len(runner.user_greenlets) for runner in left)
        for runner in left:
            runner.user_greenlets.kill(block=True, timeout=5)
        pytest.fail(f"{users} Locust user greenlet(s) of {len(left)} runner(s) were still running after this test")


@pytest.fixture(scope="session")
def kneo_venv():
    """The cached venv with the real kneo-serv; skipped, with the reason, only where no Python >= 3.12 exists."""
    try:
        find_python()
    except NoSuitablePython as exc:
        pytest.skip(f"kneo-serv needs Python >= 3.12: {exc}")
    return ensure_venv()


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway PostgreSQL cluster for the session's kneo tests."""
    try:
        find_bindir()
    except PostgresError as exc:
        pytest.skip(f"no PostgreSQL here: {exc}")
    with PostgresCluster(fsync=False) as cluster:
        yield cluster


WORKERS_PER_CORE = 2  # most tests wait on real time (a Locust run of N seconds), so two per core overlap them
MAX_WORKERS = 3  # a fourth on 2 cores left timing-bound real runs (dropped tickets, 1 s windows) too little CPU


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): two workers per core, at most three. A command that names test files or
    node ids gets no more workers than files (``--dist loadfile`` gives each file one), and none for a single file,
    which then runs in this process as it always did. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` wins."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    workers = min(MAX_WORKERS, WORKERS_PER_CORE * (os.cpu_count() or 1))
    files = {arg.split("::")[0] for arg in config.args}
    if config.args and all(name.endswith(".py") for name in files):
        return 0 if len(files) == 1 else min(workers, len(files))
    return workers
