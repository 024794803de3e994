"""The trend sentence says what the table shows, for synthetic step tables of every shape (property tests)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from swarmgauge.core.numbers import format_latency, format_rate, significant
from swarmgauge.reports.trend import StepPoint, trend_sentence

USERS = [1, 4, 16, 64, 256, 1024, 4096, 16384]
rates = st.floats(min_value=5.0, max_value=50_000.0, allow_nan=False)
gains = st.floats(min_value=1.15, max_value=4.0)


def _points(values: list[float], **extra) -> list[StepPoint]:
    return [StepPoint(users=USERS[i], rps=v, p50_ms=USERS[i] / v * 1000.0, **extra) for i, v in enumerate(values)]


@given(start=rates, steps=st.lists(gains, min_size=1, max_size=5))
def test_a_rising_table_says_rising(start, steps):
    values = [start]
    for gain in steps:
        values.append(values[-1] * gain)
    sentence = trend_sentence(_points(values))
    assert sentence.startswith("Throughput rises"), sentence
    assert f"to {format_rate(values[-1])} req/s at {USERS[len(values) - 1]} users" in sentence


@given(
    start=rates,
    rising=st.lists(gains, min_size=0, max_size=3),
    plateau=st.lists(st.floats(min_value=0.97, max_value=1.03), min_size=1, max_size=3),
)
def test_a_flat_table_names_the_knee_and_littles_law(start, rising, plateau):
    values = [start]
    for gain in rising:
        values.append(values[-1] * gain)
    knee = len(values) - 1
    for change in plateau:
        values.append(values[-1] * change)
    sentence = trend_sentence(_points(values))
    match = re.fullmatch(
        r"Throughput flattens at about (\S+) req/s from (\d+) users? on; more users only queue "
        r"\(at (\d+) users Little's law gives (\S+ m?s), measured p50 (\S+ m?s)\)\.",
        sentence,
    )
    assert match, sentence
    assert match.group(1) == format_rate(values[knee])
    assert int(match.group(2)) == USERS[knee] and int(match.group(3)) == USERS[knee + 1]
    assert match.group(4) == match.group(5)  # the synthetic p50 is exactly Little's law


@given(
    start=rates,
    rising=st.lists(gains, min_size=1, max_size=3),
    fall=st.floats(min_value=0.15, max_value=0.9),
    tail=st.integers(min_value=0, max_value=1),
)
def test_a_falling_table_says_from_where_and_by_how_much(start, rising, fall, tail):
    values = [start]
    for gain in rising:
        values.append(values[-1] * gain)
    peak = len(values) - 1
    values += [values[peak] * (1 - fall)] * (1 + tail)
    sentence = trend_sentence(_points(values))
    assert sentence.startswith("Throughput falls"), sentence
    assert f"peaks at {format_rate(values[peak])} req/s at {USERS[peak]} users" in sentence
    assert f"drops from the {USERS[peak + 1]}-user step on" in sentence
    assert f"({fall * 100:.0f} % lower)" in sentence


def test_the_issue_demo_table_is_a_fall_not_a_plateau():
    sentence = trend_sentence(_points([1396, 3042, 1698]))
    assert sentence.startswith("Throughput falls: it peaks at 3042 req/s at 4 users, then drops from the 16-user step")
    assert "(44 % lower)" in sentence
    assert "not sampled" in sentence


def test_a_fall_names_the_saturated_side():
    generator = trend_sentence(
        [
            StepPoint(1, 100, generator_cpu=40),
            StepPoint(4, 300, generator_cpu=60),
            StepPoint(16, 150, generator_cpu=97, target_cpu=50),
        ]
    )
    assert "load generator was saturated there (97 % of a core)" in generator
    target = trend_sentence(
        [
            StepPoint(1, 100, generator_cpu=10, target_cpu=40),
            StepPoint(4, 300, target_cpu=80),
            StepPoint(16, 150, generator_cpu=20, target_cpu=99),
        ]
    )
    assert "the target was saturated there (99 % of a core)" in target
    neither = trend_sentence(
        [
            StepPoint(1, 100, generator_cpu=10, target_cpu=40),
            StepPoint(4, 300),
            StepPoint(16, 150, generator_cpu=20, target_cpu=50),
        ]
    )
    assert "neither generator nor target was CPU-saturated (generator 20 %, target 50 %" in neither


@settings(max_examples=50)
@given(values=st.lists(rates, min_size=2, max_size=5), ratio=st.floats(min_value=1.01, max_value=3.0))
def test_in_step_variation_above_the_step_differences_is_noisy(values, ratio):
    spread = (max(values) - min(values)) * ratio + 1.0
    points = [StepPoint(users=USERS[i], rps=v, spread=spread) for i, v in enumerate(values)]
    sentence = trend_sentence(points)
    assert sentence.startswith("Too noisy to read a trend"), sentence


def test_a_rerun_of_the_demo_with_short_steps_is_noisy():
    points = [StepPoint(1, 1153, spread=300), StepPoint(4, 2969, spread=900), StepPoint(16, 2994, spread=1900)]
    assert trend_sentence(points).startswith("Too noisy to read a trend: req/s varies by ±1900 within a step")


def test_fewer_than_two_steps_or_no_throughput_give_no_sentence():
    assert trend_sentence([StepPoint(1, 100)]) is None
    assert trend_sentence([StepPoint(1, 0), StepPoint(4, 0)]) is None


def test_three_significant_digits():
    assert format_latency(0.627) == "0.627 ms" and format_latency(1.212) == "1.21 ms"
    assert format_latency(20.4) == "20.4 ms" and format_latency(423.4) == "423 ms"
    assert format_latency(1770) == "1.77 s" and format_latency(123456) == "123 s"
    assert format_rate(3042.4) == "3042" and format_rate(5.0) == "5.00" and significant(0.0123) == "0.0123"
