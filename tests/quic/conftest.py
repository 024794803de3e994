"""The QUIC tests run once per engine, as the Mark client's do: the same ``quic_engine`` fixture."""

from tests.users.conftest import quic_engine  # noqa: F401 - a fixture, found by pytest here
