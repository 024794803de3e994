"""The MDK benchmark's Users beside the ``--mdk-weights`` mix: closed-loop readers, one-at-a-time latencies, and
the open-model action burst.

Each is abstract; ``locustfiles/mdk_fleet.py`` runs them as thin subclasses of the same name (a plan's
``user_classes`` names those). The burst takes its tickets through :data:`hooks.take_ticket` (the scheduler is in
``shapes/open_model.py``, which a User may not import).
"""

from __future__ import annotations

from typing import Any, ClassVar

from locust import constant, events

from swarmgauge.core import hooks, option_kinds
from swarmgauge.core.options import add_option
from swarmgauge.users.mdk_client import TASK_NAMES
from swarmgauge.users.mdk_user import MDKUser, parse_weights

#: A wait without a ticket (a closed step): the same as ``shapes.open_model.tickets()``'s.
IDLE_WAIT_S = 0.5


class MDKReader(MDKUser):
    """A closed-loop device reader: telemetry of a random device, back to back."""

    abstract = True
    wait_time = constant(0)
    weights = {"telemetry": 1}


#: The one-at-a-time user's shares when ``--mdk-one-at-a-time-mix`` is not given (a summary reads every device, so
#: it is sent less often).
ONE_AT_A_TIME_MIX = "telemetry=3,action=3,summary=1"
MIX_FLAG = "--mdk-one-at-a-time-mix"


def parse_mix(text: str) -> dict[str, int]:
    """``--mdk-one-at-a-time-mix``: requests of each kind, as ``--mdk-weights`` is written."""
    return parse_weights(text, MIX_FLAG)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        MIX_FLAG,
        kind=option_kinds.parsed_by(parse_mix),
        default=ONE_AT_A_TIME_MIX,
        include_in_web_ui=False,
        help="requests of each kind the one-at-a-time user sends in turn, the kind furthest behind its share next "
        f"(default {ONE_AT_A_TIME_MIX})",
    )


class MDKOneAtATime(MDKUser):
    """The page's one-at-a-time latencies: device reads, single action submits and fleet summaries, back to back,
    one request in flight. The kinds take turns by ``--mdk-one-at-a-time-mix``, the one furthest behind its share
    next, not drawn at random: a step sized for the mix gives every kind its share, so each figure the samples its
    tolerance needs (drawn at random, the 12 s step at 2,000 / 1 sent 4 summaries of 2.5 s and 2 device reads)."""

    abstract = True
    wait_time = constant(0)

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        given = getattr(environment.parsed_options, "mdk_one_at_a_time_mix", None)
        self.mix = parse_mix(given or ONE_AT_A_TIME_MIX)
        self.sent = dict.fromkeys(TASK_NAMES, 0)

    def next_kind(self) -> str:
        """The kind whose next request is furthest behind its share (ties in ``TASK_NAMES`` order)."""
        names = [name for name in TASK_NAMES if self.mix.get(name)]
        kind = min(names, key=lambda name: (self.sent[name] + 1) / self.mix[name])
        self.sent[kind] += 1
        return kind


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
