"""Suite-wide set-up: gevent's monkey patching must happen before anything imports ssl; shared fixtures.

Locust patches at import; several modules under test (MCP, kneo, the HTTP users) import ssl through urllib3 or
anyio, so the patch is done here, first, exactly as the ``locust`` command does it.
"""

import locust  # noqa: F401  (patches the standard library on import)
import pytest

from swarmgauge.targets.kneo import NoSuitablePython, ensure_venv, find_python
from swarmgauge.targets.postgres import PostgresCluster, PostgresError, find_bindir


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
