"""The MDK benchmark's Users beside the ``--mdk-weights`` mix: closed-loop readers, one-at-a-time latencies, and
the open-model action burst.

Each is abstract; ``locustfiles/mdk_fleet.py`` runs them as thin subclasses of the same name (a plan's
``user_classes`` names those). The burst takes its tickets through :data:`hooks.take_ticket` (the scheduler is in
``shapes/open_model.py``, which a User may not import).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from gevent.event import Event
from locust import constant

from swarmgauge.core import hooks
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.users.mdk_user import MDKUser

#: The longest wait without a ticket (a closed step): the same as ``shapes.open_model.tickets()``'s.
IDLE_WAIT_S = 0.5


@dataclass
class _StepStart(PerEnvironment):
    """Owned by ``users/mdk_fleet_users.py``: an event set when the next step begins (then replaced), so a burst user
    idle in a closed step looks for a ticket at the burst's first instant instead of up to ``IDLE_WAIT_S`` into it."""

    event: Event = field(default_factory=Event)


@hooks.step_changed.add_listener
def _wake_idle_burst_users(environment: Any, **_kwargs: Any) -> None:
    started = _StepStart.of(environment)
    ended, started.event = started.event, Event()
    ended.set()


class MDKReader(MDKUser):
    """A closed-loop device reader: telemetry of a random device, back to back."""

    abstract = True
    wait_time = constant(0)
    weights = {"telemetry": 1}


class MDKOneAtATime(MDKUser):
    """The page's one-at-a-time latencies: device reads, single action submits and fleet summaries, back to back,
    one request in flight (a summary reads every device, so it is drawn less often)."""

    abstract = True
    wait_time = constant(0)
    weights = {"telemetry": 3, "action": 3, "summary": 1}


class MDKBurstUser(MDKUser):
    """One ``--mdk-action`` submit per open-model ticket (the burst), and none without a ticket: the iteration after an
    idle wait submits nothing. The first ticket is waited for at the end of ``on_start``, through Locust's own
    ``wait()``, as the ``OpenModel`` mixin does.

    Idle in a closed step (the discover stage), a user waits for the next step's start, at most ``IDLE_WAIT_S``: a
    fixed 0.5 s sleep woke the users up to 0.5 s into the burst, ~500 tickets already due, and ~200 submits reached
    the Kernel at once, a queue its lane (just faster than 1,000/s) never worked off: every accept of the 2,000-device
    bursts waited ~130-190 ms where the page's harness, submitting evenly, waited tens of ms."""

    abstract = True
    takes_tickets: ClassVar[bool] = True  # read by shapes.open_model.takes_tickets
    weights = {"action": 1}
    ticketed = False

    def on_start(self) -> None:
        super().on_start()
        self.wait()

    def wait_time(self) -> float:
        self.ticketed = bool(hooks.take_ticket(self))
        if not self.ticketed:
            _StepStart.of(self.environment).event.wait(IDLE_WAIT_S)
        return 0.0

    def do_action(self) -> None:
        if self.ticketed:
            self.ticketed = False
            super().do_action()
