"""Base classes of every named error swarmgauge raises, so callers can catch the family."""


class SwarmgaugeError(Exception):
    """Anything swarmgauge reports as a named failure."""


class UsageError(SwarmgaugeError):
    """A bad option, plan or argument: the run stops before it starts, with one line."""
