"""Steps where users ran and nothing answered: every gate fails there, with that said.

A target that completes the handshake (or accepts the connection) and then never answers leaves each user waiting in
one request until it is stopped. Those requests are recorded as ``Unfinished`` failures (``users/recording.py``), so
``fail_ratio`` sees them; but a gate over something else (``p99``, ``rss_delta``, a counter) could still pass on a
step that measured nothing the target did. A step that held users (or an arrival rate), recorded unfinished requests
and had no request that ended is *silent*: :func:`fail_silent` fails each verdict with ``no answers in step N
(X unfinished)``, and :mod:`listeners.outcome` gives the run a non-zero exit code even without a gate.

Only the final verdicts apply it (``slo.check``): mid-run, a step that has just begun has answered nothing yet.
A step in which nothing at all was recorded (users idle by design, as kneo's batch mode after its batch) is not
silent: nothing was asked of the target, and a request gate over it already says "no data".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from locust.env import Environment

from swarmgauge.listeners import steps
from swarmgauge.listeners.step_stats import StepMerge


@dataclass(frozen=True)
class SilentStep:
    """A step with users and no answer: its index, label and the requests cut off in it."""

    index: int
    label: str
    unfinished: int

    @property
    def reason(self) -> str:
        return f"no answers in step {self.index} ({self.unfinished} unfinished)"


def offered_load(info: Any) -> bool:
    """Whether a step asked for load: users (closed model) or an arrival rate (open model) above zero."""
    return bool((info.users or 0) > 0 or (info.rate or 0) > 0)


def find_silent(merged: StepMerge, infos: Sequence[Any]) -> list[SilentStep]:
    """The steps that offered load, recorded unfinished requests and had no operation that ended.

    Handshakes riding along with the operations (``QUIC``/``handshake``) are no answer: a server that completes the
    handshake and never answers a stream is the case this is for. Their unfinished ones are counted in X."""
    silent = []
    for info in infos:
        if not offered_load(info):
            continue
        unfinished = merged.select(info.index, None, None).unfinished
        if unfinished and merged.aggregated(info.index).answered == 0:
            silent.append(SilentStep(info.index, info.label, unfinished))
    return silent


def silent_steps(environment: Environment) -> list[SilentStep]:
    """The run's silent steps, from what the master merged (call after the steps are finalized)."""
    return find_silent(steps.merged(environment), steps.step_infos(environment))


def fail_silent(verdict: dict[str, Any], silent: Sequence[SilentStep]) -> dict[str, Any]:
    """``verdict`` failed by the silent steps (in place; returned): per step for a ``@step`` gate, as a whole for a
    ``@run`` one, each reason saying which step answered nothing and how many requests were cut off."""
    if not silent:
        return verdict
    by_index = {step.index: step for step in silent}
    for entry in verdict.get("steps") or []:
        found = by_index.get(entry.get("step"))
        if found is not None:
            entry.update(status="fail", reason=found.reason)
    words = "; ".join(step.reason for step in silent)
    earlier = verdict.get("reason")
    verdict.update(status="fail", colour="red", reason=f"{words}; {earlier}" if earlier else words)
    first = next((e for e in verdict.get("steps") or [] if e.get("step") == silent[0].index), None)
    if first is not None:
        verdict.update(worst_step=first.get("label"), observed=first.get("observed"))
    return verdict
