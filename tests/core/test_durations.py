"""The one duration parser: the forms plans, trends and target options accept, and a named error for the rest."""

import pytest

from swarmgauge.core.durations import DurationError, parse_duration
from swarmgauge.core.trend import parse_warmup
from swarmgauge.errors import UsageError
from swarmgauge.shapes.plan import parse_duration as plan_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("1.5s", 1.5),
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("2m 30s", 150.0),
        ("45", 45.0),
        ("1h", 3600.0),
        ("5min", 300.0),
        ("0", 0.0),
        (" 30s ", 30.0),
        (2, 2.0),
        (0.25, 0.25),
        ("1m500ms", 60.5),
    ],
)
def test_accepted_forms(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "s", "10x", "1h30", "-5s", "ms500", "1.2.3s", None, True, [1], -1, "h1"])
def test_anything_else_is_a_named_usage_error(bad):
    with pytest.raises(DurationError) as raised:
        parse_duration(bad, "--step-time")
    assert isinstance(raised.value, UsageError) and "--step-time" in str(raised.value)


def test_plans_and_trends_use_the_same_parser():
    assert plan_duration is parse_duration
    assert parse_warmup("1h30m").seconds == 5400.0
    assert parse_warmup("10%").fraction == pytest.approx(0.1)
    with pytest.raises(UsageError):
        parse_warmup("soon")
