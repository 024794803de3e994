"""Base classes of every named error swarmgauge raises, so callers can catch the family."""


class SwarmgaugeError(Exception):
    """Anything swarmgauge reports as a named failure."""


class UsageError(SwarmgaugeError):
    """A bad option, plan or argument: the run stops before it starts, with one line."""


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
