"""What the demo's ``--scale`` means for its index: the time ``demo --all`` may take, and what a shortened run's rows
are worth (its holds, and their floors with them, shortened: fewer samples, noisier rows)."""

from __future__ import annotations

#: minutes ``demo --all`` may take on 2 cores at the scales issue 30 names (its figures to reach)
BUDGET_MIN = {1.0: 20.0, 0.25: 6.0}
#: what the holds become, said in words where a reader says it so
FRACTIONS = {0.25: "a quarter", 0.5: "a half", 0.75: "three quarters"}


def budget_minutes(scale: float) -> float:
    """The budget at ``scale``: the issue's 6 min at 0.25 and 20 at 1, a straight line between them (the load
    planned grows about linearly with the scale there); below 0.25 the floors of the holds and the start-up leave
    it at 6, above 1 it stretches with the holds."""
    (low, low_min), (high, high_min) = sorted(BUDGET_MIN.items())
    if scale <= low:
        return low_min
    if scale >= high:
        return high_min * scale / high
    return low_min + (high_min - low_min) * (scale - low) / (high - low)


def _fraction(share: float) -> str:
    return FRACTIONS.get(round(share, 2), f"{share:.2g} of their length")


def scale_note(scale: float | None) -> str:
    """One line for a run shortened below scale 1 ("" at scale 1 and above, or with no scale recorded)."""
    if not isinstance(scale, int | float) or scale >= 1:
        return ""
    return (
        f"--scale {scale:g}: steps and soaks shortened to {_fraction(scale)}, their floors with them (never under "
        "what a workload's mechanism needs); "
        'rows are noisier, and a row read over fewer requests than its tolerance needs says "few samples".'
    )
