"""The one shape engine: runs a :class:`~swarmgauge.plans.plan.Plan` stage by stage and announces each stage as a step.

Every public shape (``StepRamp``, ``Soak``, ``ArrivalRate``, ``Burst``, ``Churn``, ``PlanShape``) is this engine with
a different way to build its plan: class attributes first (for subclassing in a locustfile), then the options.
The plan is built and validated in ``init`` on the master, so a bad plan stops the run with one line before any
user spawns. Spawn rates are chosen so a ramp takes at most a tenth of its stage (and at most 2 s), because
Locust's ``tick()`` blocks while spawning; the tick sleeps up to a stage boundary so steps change on time. A step
that adds users to running ones and has a warm-up holds its spawn for part of that warm-up (:data:`SETTLE_SECONDS`
at most): the requests the previous step's users have in flight finish first, so the new users' start-up work
(QUIC/TLS handshakes) cannot stall them and inflate the previous step's tail.

When the plan is over the shape ends the run in three bounded phases before it lets Locust quit: it lets an
open-model step's last tickets be taken (``tail_seconds``), stops every user through Locust's own ramp-down (which
honours ``--stop-timeout``, so requests in flight finish and are counted), then asks every worker for its last
per-step figures (:func:`listeners.steps.request_final_reports`). Locust's own quit waits only half a second for
final reports, and its ``stop()`` stalls the event loop long enough to inflate the latency of requests still in
flight; after these phases neither can touch what was measured.
"""

from __future__ import annotations

import logging
import time
from typing import Any, ClassVar, cast

import gevent
from locust import LoadTestShape, User
from locust.runners import Runner

from swarmgauge.core import hooks
from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import Plan, Stage, build_plan, plan_from_options
from swarmgauge.shapes.overrides import LOCUST_OPTIONS_SOURCE, fit_plan
from swarmgauge.shapes.plan_options import (
    PLAN_OPTIONS,
    check_plan_option_values,
    refuse_beside_plan_file,
    refuse_plan_options,
)

logger = logging.getLogger("swarmgauge.shapes")


class _StopTickWarning(logging.Filter):
    """Locust warns of any spawn rate above 100 a second (to the user, on every planned run); the end of a plan asks
    for :data:`STOP_SPAWN_RATE` only to stop every user at once, not to ramp, so while that tick is applied its one
    warning is dropped. Every other record, and that warning at any other time, passes."""

    armed = False

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.armed and "spawn rate is very high" in record.getMessage())


_STOP_TICK_WARNING = _StopTickWarning()
logging.getLogger("locust.runners").addFilter(_STOP_TICK_WARNING)

MAX_RAMP_SECONDS = 2.0
RAMP_FRACTION = 0.1
STOP_SPAWN_RATE = 10_000.0
STOP_GRACE_SECONDS = 5.0
FINAL_REPORT_SECONDS = 5.0
POLL_SECONDS = 0.05
SETTLE_SECONDS = 2.0
#: The plan options that make a plan on their own (the others only tune one).
PLAN_MAKERS = ("plan", "steps", "rate")


class SwarmShape(LoadTestShape):
    """Base of swarmgauge's shapes; subclasses set ``kind`` and plan attributes or leave them to the options."""

    abstract: ClassVar[bool] = True
    kind: ClassVar[str | None] = None
    plan_keys: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        self._plan: Plan | None = None
        self._announced: int | None = None
        self._ended = False
        self._stopping_users = False
        self._last_run_time = 0.0
        self._cut_at: float | None = None
        self._end_requested = False

    # plan -------------------------------------------------------------------------------------------------------
    def class_plan_doc(self) -> dict[str, Any]:
        doc = {key: getattr(self, key) for key in self.plan_keys if getattr(self, key, None) is not None}
        if doc:
            doc["kind"] = self.kind
            doc.setdefault("name", type(self).__name__)
        return doc

    def build(self, options: Any) -> Plan:
        """The class attributes' plan (which refuses plan options), else the options' plan, else the fallback."""
        check_plan_option_values(options)
        doc = self.class_plan_doc()
        if doc:
            refuse_plan_options(type(self).__name__, doc, options)
            return build_plan(doc, source=type(self).__name__)
        refuse_beside_plan_file(options)
        plan = plan_from_options(options)
        if plan is None:
            return self.fallback_plan(options)
        if (
            self.kind is not None
            and plan.kind != self.kind
            and not (self.kind == "soak" and plan.kind == "arrival_rate")
        ):
            raise UsageError(f"{type(self).__name__} runs {self.kind} plans, the options give a {plan.kind} plan")
        return plan

    def fallback_plan(self, options: Any) -> Plan:
        raise UsageError(
            f"{type(self).__name__}: no plan; give --plan FILE or --steps/--step-time or --rate/--duration"
        )

    def forget_plan(self) -> None:
        """The plan is built again from the options at its next use (a START or ``init`` with new options)."""
        self._plan = None

    def restart(self) -> None:
        """A new run in the same process (the web UI's next START): no plan, nothing announced, nothing ended."""
        self._plan, self._announced, self._ended, self._stopping_users = None, None, False, False
        self._last_run_time = 0.0

    def plan(self) -> Plan:
        """Built once per run (``init``, and each web UI START); what it replaces of what was asked is logged and kept
        in ``Plan.overrides`` (:mod:`shapes.overrides`)."""
        if self._plan is None:
            environment = self.runner.environment if self.runner is not None else None
            options = getattr(environment, "parsed_options", None)
            self._plan = fit_plan(self.build(options), environment, options)
        return self._plan

    def plan_summary(self) -> dict[str, Any] | None:
        try:
            return self.plan().summary()
        except UsageError:
            return None

    def plan_slos(self) -> list[str]:
        return list(self.plan().slos)

    def _live_runner(self) -> Runner:
        """The runner ticking this shape: Locust sets ``runner`` before the first tick."""
        return cast(Runner, self.runner)

    # ticking ----------------------------------------------------------------------------------------------------
    def stage_at(self, run_time: float) -> tuple[int, Stage, float] | None:
        """The stage running at ``run_time`` with its index and the time left in it."""
        elapsed = 0.0
        for index, stage in enumerate(self.plan().stages):
            if run_time < elapsed + stage.duration:
                return index, stage, elapsed + stage.duration - run_time
            elapsed += stage.duration
        return None

    def spawn_rate_for(self, index: int, stage: Stage) -> float:
        if stage.spawn_rate:
            return stage.spawn_rate
        previous = self.plan().stages[index - 1].user_count if index > 0 else 0
        window = min(MAX_RAMP_SECONDS, RAMP_FRACTION * stage.duration)
        return max(1.0, abs(stage.user_count - previous) / max(window, 0.05))

    def settle_seconds(self, index: int, stage: Stage) -> float:
        """How long a step's new users wait for the running users' requests in flight: within its warm-up only."""
        previous = self.plan().stages[index - 1].user_count if index > 0 else 0
        if previous <= 0 or stage.user_count <= previous or not stage.warmup or stage.open_model:
            return 0.0
        return min(SETTLE_SECONDS, stage.warmup / 2.0)

    def _announce(self, index: int, stage: Stage) -> None:
        info = hooks.StepInfo(
            index=index,
            label=stage.label,
            users=stage.user_count,
            rate=stage.rate,
            started_at=time.time(),
            duration=stage.duration,
            warmup=stage.warmup,
            drop_after=stage.drop_after if stage.open_model else None,
            rate_end=stage.rate_end,
        )
        hooks.announce_step(self._live_runner().environment, info)
        self._announced = index

    def _user_classes(self, stage: Stage) -> list[Any] | None:
        if not stage.user_classes:
            return None
        environment = self._live_runner().environment
        known = (
            # locust annotates available_user_classes as dict[str, User], but it maps names to classes
            {
                cls.__name__: cls
                for cls in cast("dict[str, type[User]]", environment.available_user_classes or {}).values()
            }
            if getattr(environment, "available_user_classes", None)
            else {c.__name__: c for c in environment.user_classes}
        )
        missing = [name for name in stage.user_classes if name not in known]
        if missing:
            raise UsageError(f"plan stage {stage.label!r}: unknown user class(es) {', '.join(missing)}")
        chosen = {cls.__name__ for cls in environment.user_classes or []}
        left_out = [name for name in stage.user_classes if chosen and name not in chosen]
        if left_out:
            raise UsageError(
                f"plan stage {stage.label!r} runs {', '.join(left_out)}, which this run left out (it runs "
                f"{', '.join(sorted(chosen))}): name no classes, pick the plan's, or give steps of your own "
                "(--steps/--rate instead of the plan)"
            )
        return [known[name] for name in stage.user_classes]

    def check_stage_classes(self) -> list[tuple[Stage, list[Any] | None]]:
        """Each stage with the User classes it runs (None: the run's own); raises UsageError, before any load, for
        a class the locustfile lacks or one the run left out (Locust's runner knows only the classes it runs)."""
        return [(stage, self._user_classes(stage)) for stage in self.plan().stages]

    def run_time_limit(self) -> float | None:
        """``-t/--run-time`` in seconds: it bounds every run, a planned one too (Locust starts it after a shape)."""
        environment = self.runner.environment if self.runner is not None else None
        limit = getattr(getattr(environment, "parsed_options", None), "run_time", None)
        return float(limit) if limit else None

    def plan_in_effect(self) -> bool:
        """False when the plan is only Locust's ``-u/-r/-t`` (no plan option, no class plan): the users are then the
        web form's to set, and EDIT moves them (``listeners.form_steps``)."""
        return self.plan().source != LOCUST_OPTIONS_SOURCE

    def plan_in_effect_for(self, values: Any) -> bool:
        """Would a plan still drive the users with these plan option fields (an EDIT dialog's Custom parameters)?
        A class plan always does; otherwise only ``--plan``, ``--steps`` or ``--rate`` make one."""
        if self.class_plan_doc():
            return True
        options = getattr(getattr(self.runner, "environment", None), "parsed_options", None)
        for dest in PLAN_MAKERS:
            typed = values.get(dest) if dest in values else getattr(options, dest, None)
            if str(typed or "").strip():
                return True
        return False

    def hand_over(self, by: str) -> None:
        """The form takes the users over from a running plan: the plan is marked cut short ``by`` it, and its options
        are emptied, so what repeats this run and the next START's form no longer name it."""
        self.note_stop(by=by)
        options = getattr(self._live_runner().environment, "parsed_options", None)
        for dest in PLAN_OPTIONS if options is not None else ():
            setattr(options, dest, None)

    def cut_short(self, run_time: float, by: str = "-t/--run-time") -> None:
        """The plan is stopped at ``run_time`` (the run-time limit, a STOP, an EDIT taking over); run.json (and so the
        report) says by what, where and what was left."""
        plan = self.plan()
        found = self.stage_at(run_time)
        self._cut_at = run_time
        logger.info("%s at %.0f s: the %.0f s plan is cut short", by, run_time, plan.total_duration)
        hooks.add_run_info(
            self._live_runner().environment,
            "cut_short",
            {
                "by": by,
                "run_time_s": round(run_time, 1),
                "planned_s": plan.total_duration,
                "during_step": found[1].label if found else None,
                "steps_not_run": [s.label for s in plan.stages[found[0] + 1 :]] if found else [],
            },
        )

    def note_stop(self, by: str = "STOP") -> None:
        """The run was stopped from outside (the web UI's STOP): a plan still running is marked cut short there."""
        if self._plan is None or self._announced is None or self._ended or self._cut_at is not None:
            return
        self.cut_short(self.get_run_time(), by=by)

    def request_end(self) -> None:
        """End the plan at the next tick, as if its last stage were over (SIGTERM/SIGINT: ``listeners.signals``)."""
        self._end_requested = True

    def plan_ended(self) -> bool:
        """The plan has reached its end (its last stage over, cut short, or an end requested) and the run is closing:
        a signal from here on ended nothing (compose sends the master SIGTERM as soon as its workers have quit)."""
        return self._ended

    def tail_seconds(self) -> float:
        last = self.plan().stages[-1]
        return min(last.drop_after, 1.0) if last.open_model else 0.0

    def _finish(self, run_time: float) -> tuple[int, float] | None:
        """After the last stage: the open-model tail, then all users stopped, then the final reports."""
        environment = self._live_runner().environment
        if not self._ended:
            hooks.end_run(environment)
            self._ended = True
        if self._announced is None:
            return None
        end = self._cut_at if self._cut_at is not None else self.plan().total_duration + self.tail_seconds()
        tail_left = end - run_time
        if tail_left > 0 and not self._end_requested and not self._stopping_users:
            self._wait_out_tickets(environment, tail_left)
        _STOP_TICK_WARNING.armed = False  # Locust applied the stop tick (and warned) before asking again
        if not self._stopping_users:
            self._stopping_users = True
            _STOP_TICK_WARNING.armed = True
            return 0, STOP_SPAWN_RATE
        self._wait_until(
            lambda: self._live_runner().user_count == 0,
            float(getattr(environment, "stop_timeout", 0) or 0) + STOP_GRACE_SECONDS,
        )
        hooks.collect_final_reports(environment, FINAL_REPORT_SECONDS, POLL_SECONDS)
        return None

    @classmethod
    def _wait_out_tickets(cls, environment: Any, seconds: float) -> None:
        """The open-model tail, at most ``seconds``: over once no ticket is left to take, seen at two looks a poll
        apart (a user handed the last ticket sends its request in between). Waited out in full, it was a second of
        every run that ends on a burst, with nothing left to send."""
        looks_with_none_left = [0]

        def none_left_twice() -> bool:
            looks_with_none_left[0] = 0 if hooks.tickets_left(environment) else looks_with_none_left[0] + 1
            return looks_with_none_left[0] >= 2

        cls._wait_until(none_left_twice, seconds)

    @staticmethod
    def _wait_until(condition: Any, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while not condition():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            gevent.sleep(min(POLL_SECONDS, left))
        return True

    def tick(self) -> tuple[int, float] | tuple[int, float, list[Any] | None] | None:
        run_time = self.get_run_time()
        if self._ended and run_time < self._last_run_time:
            self._announced, self._ended, self._stopping_users = None, False, False  # a new run (web UI)
            self._cut_at = None
            self._end_requested = False
        self._last_run_time = run_time
        found = None if self._end_requested else self.stage_at(run_time)
        limit = self.run_time_limit()
        if found is not None and self._cut_at is None and limit is not None and run_time >= limit:
            self.cut_short(run_time)
        if found is None or self._cut_at is not None:
            return self._finish(run_time)
        index, stage, left = found
        if limit is not None:
            left = min(left, max(0.0, limit - run_time))
        if index != self._announced:
            self._announce(index, stage)
            gevent.sleep(self.settle_seconds(index, stage))
        elif left < 1.0:
            gevent.sleep(left)
            return self.tick()
        classes = self._user_classes(stage)
        rate = self.spawn_rate_for(index, stage)
        return (stage.user_count, rate, classes) if classes else (stage.user_count, rate)
