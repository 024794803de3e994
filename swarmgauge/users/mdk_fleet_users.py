"""The MDK benchmark's Users beside the ``--mdk-weights`` mix: closed-loop readers, one-at-a-time latencies, and
the open-model action burst.

Each is abstract; ``locustfiles/mdk_fleet.py`` runs them as thin subclasses of the same name (a plan's
``user_classes`` names those). The burst takes its tickets through :data:`hooks.take_ticket` (the scheduler is in
``shapes/open_model.py``, which a User may not import).
"""

from __future__ import annotations

from typing import ClassVar

from locust import constant

from swarmgauge.core import hooks
from swarmgauge.users.mdk_user import MDKUser

#: A wait without a ticket (a closed step): the same as ``shapes.open_model.tickets()``'s.
IDLE_WAIT_S = 0.5


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
    """One ``--mdk-action`` submit per open-model ticket (the burst), and none without a ticket: the wait returns 0
    only for a ticket, so the idle returns of a closed step (the discover stage) submit nothing. The first ticket is
    waited for at the end of ``on_start``, through Locust's own ``wait()``, as the ``OpenModel`` mixin does."""

    abstract = True
    takes_tickets: ClassVar[bool] = True  # read by shapes.open_model.takes_tickets
    weights = {"action": 1}
    ticketed = False

    def on_start(self) -> None:
        super().on_start()
        self.wait()

    def wait_time(self) -> float:
        self.ticketed = bool(hooks.take_ticket(self))
        return 0.0 if self.ticketed else IDLE_WAIT_S

    def do_action(self) -> None:
        if self.ticketed:
            self.ticketed = False
            super().do_action()
