"""``run_apart``: a call on a greenlet of its own that returns, raises and is interrupted as the call in place."""

from __future__ import annotations

import gevent
import gevent.event
import pytest
from greenlet import getcurrent

from swarmgauge.quic.apart import run_apart

pytestmark = pytest.mark.timeout(10)


def test_the_call_runs_on_another_greenlet_and_returns_its_result():
    caller = getcurrent()
    ran_on = []

    def call(a, b):
        ran_on.append(getcurrent())
        gevent.sleep(0.01)
        return a + b

    assert run_apart(call, 2, 3) == 5
    assert ran_on and ran_on[0] is not caller


def test_the_calls_own_exception_reaches_the_caller_unreported(capsys):
    error = ValueError("refused")

    def call():
        gevent.sleep(0)
        raise error

    with pytest.raises(ValueError) as raised:
        run_apart(call)
    assert raised.value is error
    gevent.sleep(0.01)
    assert "ValueError" not in capsys.readouterr().err  # not printed by the hub as an unhandled greenlet error


def test_a_kill_of_the_waiting_caller_is_thrown_into_the_call_which_cleans_up_first():
    entered, release = gevent.event.Event(), gevent.event.Event()
    seen = []

    def call():
        entered.set()
        try:
            release.wait()
        except BaseException as exc:
            seen.append(type(exc).__name__)
            raise
        finally:
            seen.append("cleaned up")

    outcome = []

    def caller():
        try:
            run_apart(call)
        except BaseException as exc:
            outcome.append(type(exc).__name__)
            raise

    waiting = gevent.spawn(caller)
    entered.wait()
    waiting.kill(block=True)
    assert seen == ["GreenletExit", "cleaned up"]
    assert outcome == ["GreenletExit"] and waiting.dead


def test_a_timeout_of_the_caller_reaches_the_call_and_then_the_caller():
    seen = []

    def call():
        try:
            gevent.sleep(5)
        except gevent.Timeout:
            seen.append("timeout in the call")
            raise

    with pytest.raises(gevent.Timeout), gevent.Timeout(0.05):
        run_apart(call)
    assert seen == ["timeout in the call"]


def test_a_call_that_handles_the_interruption_gives_its_result():
    def call():
        try:
            gevent.sleep(5)
        except gevent.Timeout:
            return "handled"
        return "slept"

    with gevent.Timeout(0.05, False):
        assert run_apart(call) == "handled"
