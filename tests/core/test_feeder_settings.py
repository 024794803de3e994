"""The feeder's options read once: the end-of-rows default per mode, each bad value a UsageError, Users' columns."""

from __future__ import annotations

import argparse

import pytest

from swarmgauge.core.feeder_settings import needed_columns, settings_from
from swarmgauge.errors import UsageError


def _options(**given) -> argparse.Namespace:
    values = {"feeder": "rows.csv", "feeder_mode": "shared", "feeder_exhausted": "", "feeder_batch": 20}
    values.update(given)
    return argparse.Namespace(**values)


def test_no_file_is_no_feeder():
    assert settings_from(_options(feeder="")) is None
    assert settings_from(None) is None


def test_shared_recycles_and_unique_stops_unless_told():
    assert settings_from(_options()).exhausted == "recycle"
    assert settings_from(_options(feeder_mode="unique")).exhausted == "stop"
    assert settings_from(_options(feeder_mode="unique", feeder_exhausted="recycle")).stops is False


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"feeder_batch": 0}, r"--feeder-batch must be 1\.\.1000, got 0"),
        ({"feeder_batch": 1001}, r"--feeder-batch must be 1\.\.1000, got 1001"),
        ({"feeder_mode": "random"}, "--feeder-mode must be one of shared, unique, not 'random'"),
        ({"feeder_exhausted": "wrap"}, "--feeder-exhausted must be one of stop, recycle, not 'wrap'"),
    ],
)
def test_bad_values_are_usage_errors(given, says):
    with pytest.raises(UsageError, match=says):
        settings_from(_options(**given))


def test_needed_columns_name_the_first_class_that_takes_each():
    class Reader:
        feeder_columns = ("path",)

    class Caller:
        feeder_columns = ("arguments", "path")

    class Plain:
        pass

    assert needed_columns([Reader, Caller, Plain]) == {"path": "Reader", "arguments": "Caller"}
