"""The run's exit code and the reasons for it, one line each, decided once at the end from what happened.

Exit codes (the README's table), highest priority first:

- **3** an SLO failed (or ``--slo-abort`` stopped the run);
- **2** a usage error (before any load: ``errors.stop_on_usage_error``) or a crash (an unhandled greenlet exception);
- **1** (Locust's ``--exit-code-on-error``) user code raised exceptions that no SLO names (``user_errors``), a step
  with users had no answers (``listeners.unanswered``; with a gate, that gate fails: 3), or requests failed that no
  SLO on failures (``fail_ratio``, ``failures``) judged;
- **4** a gate was not exercised: an SLO is "not reached (cut short)" because ``-t`` or a signal stopped the plan
  first;
- **0** otherwise.

A run ended by a signal (SIGTERM, SIGINT, SIGHUP: ``listeners.signals``) gets the code of what it measured, as Locust
gives a run it shut down on SIGTERM or Ctrl-C: the signal is a request to stop, not a failure of the system under
test (``docker compose down`` of a clean run is 0). It is never a silent pass: the plan is marked cut short by the
signal, so a gate over a step the signal kept from running is "not reached" (4, as with ``-t``), and the first line
says the signal (``exit code 0 (run ended by SIGHUP)``), as ``run.json``'s ``ended_by`` and the report do.

Every reason that applies is a line of its own, the one that chose the code first, so a run with a failed SLO whose
user code also raised says both. Locust's own rule (errors and exceptions alike give 1, its summary read that as
"requests failed") is replaced by setting ``environment.process_exit_code``, which Locust's shutdown uses as given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from locust import log
from locust.env import Environment

from swarmgauge.core.run_context import PerEnvironment, RunContext
from swarmgauge.listeners import unanswered, user_errors

SLO_EXIT_CODE = 3
USAGE_EXIT_CODE = 2
ERROR_EXIT_CODE = 1  # Locust's default --exit-code-on-error
NOT_REACHED_EXIT_CODE = 4
NOT_REACHED = "not reached (cut short)"
FAILING = ("fail", "no data")
FAILURE_METRICS = ("fail_ratio", "failures")
USER_ERROR_METRICS = (user_errors.COUNTER,)


@dataclass
class Outcome:
    """The exit code and, in priority order, one line per thing that went wrong (empty: nothing did); ``ended_by``:
    the signal that ended the run, if one did (it sets no code of its own: see the module docstring)."""

    code: int
    reasons: list[str] = field(default_factory=list)
    ended_by: str | None = None

    def lines(self) -> list[str]:
        """``exit code N: <reason>`` and ``also: <reason>`` for each further one; ``exit code 0`` alone when clean;
        ``exit code N (run ended by SIGTERM)...`` when a signal ended the run, so its code is never read bare."""
        head = f"exit code {self.code}" + (f" (run ended by {self.ended_by})" if self.ended_by else "")
        if not self.reasons:
            return [head]
        return [f"{head}: {self.reasons[0]}", *(f"also: {reason}" for reason in self.reasons[1:])]


def covers_failures(verdicts: list[dict[str, Any]]) -> bool:
    """An SLO judged the failed requests (``fail_ratio`` or ``failures``) and held, so failed requests alone are not 1."""
    return any(v.get("metric") in FAILURE_METRICS and v.get("status") == "pass" for v in verdicts)


def names_user_errors(verdicts: list[dict[str, Any]]) -> bool:
    """An SLO names ``user_errors`` explicitly: it, not the bare fact that user code raised, decides."""
    return any(v.get("metric") in USER_ERROR_METRICS for v in verdicts)


def _error_code(environment: Environment) -> int:
    value = getattr(getattr(environment, "parsed_options", None), "exit_code_on_error", None)
    return int(value) if isinstance(value, int) else ERROR_EXIT_CODE


def _cut_short(environment: Environment) -> dict[str, Any] | None:
    found = RunContext.of(environment).run_info.get("cut_short")
    return found if isinstance(found, dict) else None


def stopper(cut: dict[str, Any]) -> str:
    """What cut the plan short, as the reason lines say it: ``-t`` (the run-time limit), a signal's name, STOP, EDIT."""
    by = str(cut.get("by") or "-t")
    return "-t" if by.startswith("-t") else by


def _failed_requests(environment: Environment) -> tuple[int, int]:
    runner = environment.runner
    total = getattr(getattr(runner, "stats", None), "total", None)
    if total is None:
        return 0, 0
    return int(total.num_failures), int(total.num_requests)


def decide(environment: Environment, verdicts: list[dict[str, Any]]) -> Outcome:
    """Every reason that applies to this run, and the code of the highest-priority one."""
    found: list[tuple[int, int, str]] = []  # (priority, code, line)
    failed = [v["expr"] for v in verdicts if v.get("status") in FAILING]
    aborted = RunContext.of(environment).aborted
    if aborted and aborted.get("expr") not in failed:
        failed.append(str(aborted.get("expr")))
    if failed:
        stopped = (
            f"; --slo-abort stopped the run after {aborted.get('after_s')} s ({aborted.get('breach')})"
            if aborted
            else ""
        )
        found.append((0, SLO_EXIT_CODE, f"SLO failed ({', '.join(failed)}){stopped}"))
    if log.unhandled_greenlet_exception:
        found.append((1, USAGE_EXIT_CODE, "crash: an unhandled exception in a greenlet (see the log above)"))
    raised = user_errors.total(environment)
    if raised and not names_user_errors(verdicts):
        text = user_errors.describe(raised, user_errors.by_class(environment))
        found.append((2, _error_code(environment), f"{text}; no SLO names user_errors"))
    silent = unanswered.silent_steps(environment)
    if silent and not failed:
        words = "; ".join(step.reason for step in silent)
        found.append((3, _error_code(environment), f"{words}: users ran and the target answered nothing"))
    failures, requests = _failed_requests(environment)
    if failures and not covers_failures(verdicts):
        line = f"requests failed ({failures} of {requests}) and no SLO covers failures (fail_ratio, failures)"
        found.append((3, _error_code(environment), line))
    not_reached = [v["expr"] for v in verdicts if v.get("status") == NOT_REACHED]
    if not_reached:
        cut = _cut_short(environment) or {}
        when = f" at {cut['run_time_s']:g} s of {cut['planned_s']:g} s" if cut.get("run_time_s") is not None else ""
        found.append(
            (
                4,
                NOT_REACHED_EXIT_CODE,
                f"cut short: {stopper(cut)} stopped the plan{when} before it measured {', '.join(not_reached)} "
                "(gate not exercised)",
            )
        )
    found.sort(key=lambda item: item[0])
    ended_by = RunContext.of(environment).run_info.get("ended_by")
    ended_by = str(ended_by) if ended_by else None
    preset = environment.process_exit_code
    if not found and preset:
        return Outcome(int(preset), [f"exit code {preset} set by a listener"], ended_by)
    return Outcome(found[0][1] if found else 0, [line for _p, _c, line in found], ended_by)


@dataclass
class _Decided(PerEnvironment):
    """Owned by ``listeners/outcome.py``: the run's decided outcome, kept for the summary."""

    outcome: Outcome | None = None


def record(environment: Environment, verdicts: list[dict[str, Any]]) -> Outcome:
    """Decide, set the process's exit code to it (Locust's shutdown uses it as given), and keep it for the summary."""
    outcome = decide(environment, verdicts)
    environment.process_exit_code = outcome.code
    _Decided.of(environment).outcome = outcome
    return outcome


def recorded(environment: Environment) -> Outcome | None:
    return _Decided.of(environment).outcome
