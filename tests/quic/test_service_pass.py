"""What a connected driver keeps: its fields (declared on ``ServicePass``) in slots, no dictionary, and no handshake
result or transport factory of its own."""

from __future__ import annotations

import pytest

from swarmgauge.quic.driver import HANDSHAKE_DONE, QuicDriver, client_configuration
from tests.quic.misbehaving_quic import GOOD_RESPONSE, MisbehavingQuicServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


def test_a_connected_driver_keeps_its_fields_without_an_instance_dictionary(quic_engine):
    server = MisbehavingQuicServer(quic_engine=quic_engine).start()
    driver = QuicDriver("127.0.0.1", server.port, client_configuration(insecure=True, quic_engine=quic_engine))
    try:
        driver.connect(timeout=5)
        assert driver.request(b"FETCH /good\n", timeout=5) == GOOD_RESPONSE
        assert not hasattr(driver, "__dict__")
        assert driver._handshake is HANDSHAKE_DONE and driver._transport_factory is None
        with pytest.raises(AttributeError):
            driver.not_a_field = 1  # type: ignore[attr-defined]  # a new field must be declared as a slot
    finally:
        driver.close()
        server.stop()
