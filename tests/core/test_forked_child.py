"""A forked child's handle waits as ``subprocess.Popen.wait`` does: the code once ``poll`` has one, a
``TimeoutExpired`` naming the child after the timeout, never idling past what is left of it."""

import subprocess

import pytest

from swarmgauge.core.forked_child import ForkedChildHandle


class ExitsAfter(ForkedChildHandle):
    """A fake child (below the seam tested: no process) that exits with ``code`` on its ``polls``-th poll."""

    wait_step_s = 0.05

    def __init__(self, polls: int, code: int = 3) -> None:
        super().__init__(4242, ["fake", "child"])
        self.polls, self.code, self.idled = polls, code, []

    def poll(self) -> int | None:
        self.polls -= 1
        if self.polls <= 0:
            self.returncode = self.code
        return self.returncode

    def idle(self, seconds: float) -> None:
        self.idled.append(seconds)


def test_wait_returns_the_code_once_poll_has_one():
    child = ExitsAfter(polls=3, code=-9)
    assert child.wait() == -9
    assert child.idled == [0.05, 0.05]


def test_wait_raises_timeout_expired_naming_the_child_and_never_idles_past_the_deadline():
    child = ExitsAfter(polls=10**9)
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        child.wait(timeout=0.01)
    assert raised.value.cmd == ["fake", "child"] and raised.value.timeout == 0.01
    assert child.idled and max(child.idled) <= 0.01


def test_the_default_idle_sleeps_between_polls():
    class Sleeper(ForkedChildHandle):
        wait_step_s = 0.001

        def __init__(self) -> None:
            super().__init__(1, ["sleeper"])
            self.left = 2

        def poll(self) -> int | None:
            self.left -= 1
            return 0 if self.left <= 0 else None

    assert Sleeper().wait(timeout=5) == 0
