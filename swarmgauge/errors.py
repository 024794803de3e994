"""Base classes of every named error swarmgauge raises, so callers can catch the family."""


class SwarmgaugeError(Exception):
    """Anything swarmgauge reports as a named failure."""


class UsageError(SwarmgaugeError):
    """A bad option, plan or argument: the run stops before it starts, with one line."""


UNFINISHED_MESSAGE = "no answer before the user was stopped"


class Unfinished(SwarmgaugeError):
    """A request still in flight when its user was stopped (the run's end, a step's ramp-down, ``--stop-timeout``
    running out): recorded once as a failure, its time so far as its response time, so a target that never answers
    cannot pass a gate on nothing. One fixed message: Locust groups failures by it."""

    def __init__(self, message: str = UNFINISHED_MESSAGE) -> None:
        super().__init__(message)


def stop_on_usage_error(check, environment) -> None:
    """Run a start-up ``check(environment)``; a :class:`UsageError` stops the run before any user spawns.

    It prints one line (``swarmgauge: <what is wrong>``) and exits 2, the code Locust uses for bad invocations.
    """
    import sys

    try:
        check(environment)
    except UsageError as exc:
        sys.stderr.write(f"swarmgauge: {exc}\n")
        sys.exit(2)
