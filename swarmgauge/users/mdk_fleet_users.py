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
from locust import constant, events

from swarmgauge.core import hooks, intended, option_kinds
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.users.mdk_client import TASK_NAMES
from swarmgauge.users.mdk_user import MDKUser, parse_weights

#: The longest wait without a ticket (a closed step): the same as ``shapes.open_model.tickets()``'s.
IDLE_WAIT_S = 0.5


@dataclass
class _NextStep(PerEnvironment):
    """Owned by ``users/mdk_fleet_users.py``: set when the next step begins (then replaced by a fresh one), so a burst
    user idle in a closed step is waiting for a ticket at the burst's first instant, not up to ``IDLE_WAIT_S`` in."""

    began: Event = field(default_factory=Event)


@hooks.step_changed.add_listener
def _wake_idle_burst_users(environment: Any, **_kwargs: Any) -> None:
    state = _NextStep.of(environment)
    began, state.began = state.began, Event()
    began.set()


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
    """One ``--mdk-action`` submit per open-model ticket (the burst), and none without a ticket: an iteration submits
    only when it began on a ticket (``core/intended.py``), whoever took it, this wait or Locust's wait routed through
    ``core/intended.py``. The first ticket is waited for at the end of ``on_start``, through Locust's own ``wait()``,
    as the ``OpenModel`` mixin does. Before it the user connects (``MDKClient.connect``: one ``GET /echo``, counted as
    ``MDK connect``, so the run counts every request the Gateway saw and no submit opens a connection).

    Idle in a closed step (the step before the burst, where the burst's users start), a user waits for the next step
    to begin, at most ``IDLE_WAIT_S``. A fixed 0.5 s sleep woke the 200 users over the burst's first 0.5 s with ~500
    tickets due, so they sent a clump of ~200 submits that the Kernel's lane at 2,000 devices (about 1,020 turns a
    second) never worked off: every accept waited ~170 ms where the page's evenly paced harness waited tens of ms."""

    abstract = True
    takes_tickets: ClassVar[bool] = True  # read by shapes.open_model.takes_tickets
    weights = {"action": 1}

    def on_start(self) -> None:
        super().on_start()
        self.client.connect()
        self.wait()

    def wait_time(self) -> float:
        if not hooks.take_ticket(self):
            # Not slept: the wait routed through core/intended.py takes the next step's first ticket if it is open.
            _NextStep.of(self.environment).began.wait(IDLE_WAIT_S)
        return 0.0

    def do_action(self) -> None:
        # Keyed on the iteration's own ticket, not on what this wait took: when the wake above lands in an open step,
        # Locust's routed wait takes the ticket, and a flag of this wait's would have skipped that ticket's submit.
        if intended.in_ticketed_iteration():
            super().do_action()
