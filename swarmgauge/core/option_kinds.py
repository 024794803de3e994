"""What values an option accepts: each declared option names its kind, and every kind is checked once at ``init``.

A number that is ``nan``, ``inf``, negative or zero where zero means nothing does not fail loudly further on: a
``nan`` timeout never fires, a ``-1`` one fails every read, a ``0`` rate runs unthrottled under the label ``0/s``.
So :func:`swarmgauge.core.options.add_option` takes ``kind=`` (one of these, or any ``check(flag, value)`` that
raises :class:`UsageError`), a numeric option (``type=int`` / ``type=float``) must name one, and
:func:`check_declared` runs every declared option's check before any user spawns: one line, exit 2.
"""

from __future__ import annotations

import argparse
import math
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from swarmgauge.errors import UsageError

#: The largest TCP/UDP port number.
MAX_PORT = 65535


@dataclass(frozen=True)
class ValueKind:
    """A named range a number must lie in; ``numeric`` kinds are the ones a sweep feeds nan, inf and -1."""

    name: str
    minimum: float
    minimum_allowed: bool
    maximum: float = math.inf
    integer: bool = False
    numeric: bool = True

    def describe(self) -> str:
        what = "a whole number" if self.integer else "a finite number"
        low = f"{'at least' if self.minimum_allowed else 'above'} {self.minimum:g}"
        high = f" and at most {self.maximum:g}" if math.isfinite(self.maximum) else ""
        return f"{what} {low}{high}"

    def __call__(self, flag: str, value: Any) -> None:
        if value is None or value == "":
            return
        try:
            figure = float(value)
        except (TypeError, ValueError):
            raise UsageError(f"{flag} {value!r}: expected {self.describe()}") from None
        in_range = figure >= self.minimum if self.minimum_allowed else figure > self.minimum
        whole = not self.integer or (math.isfinite(figure) and figure == int(figure))
        if not math.isfinite(figure) or not in_range or figure > self.maximum or not whole:
            raise UsageError(f"{flag} {value!r}: must be {self.describe()} ({self.name})")


#: A timeout, an interval, a pacing: seconds above zero (0 would mean "never wait" or "busy loop").
POSITIVE_SECONDS = ValueKind("seconds above 0", 0.0, False)
#: The longest one request (or handshake) may be given: past an hour a timeout is a typo that holds a user for a day.
MAX_REQUEST_SECONDS = 3600.0
#: One request's timeout: seconds above zero and at most :data:`MAX_REQUEST_SECONDS`.
REQUEST_TIMEOUT = ValueKind("a request timeout, seconds above 0", 0.0, False, maximum=MAX_REQUEST_SECONDS)
#: A delay or a weight where 0 means "none".
NON_NEGATIVE = ValueKind("0 or more", 0.0, True)
#: A rate: events per second above zero (0/s is no rate at all).
RATE = ValueKind("a rate above 0 per second", 0.0, False)
#: A count where 0 means "none" or "no check".
COUNT = ValueKind("a count, 0 or more", 0.0, True, integer=True)
#: A count of at least one (processes, workers, paths, ...).
POSITIVE_COUNT = ValueKind("a count, 1 or more", 1.0, True, integer=True)
#: A TCP/UDP port; 0 where the option says it means "off" or "pick a free one".
PORT = ValueKind("a port, 0 to 65535", 0.0, True, maximum=MAX_PORT, integer=True)

#: The kinds a numeric option may name.
NUMERIC_KINDS = (POSITIVE_SECONDS, REQUEST_TIMEOUT, NON_NEGATIVE, RATE, COUNT, POSITIVE_COUNT, PORT)

#: ``check(flag, value)``: raises :class:`UsageError` when ``value`` is not one ``flag`` accepts.
Check = Callable[[str, Any], None]


def parsed_by(parse: Callable[[str], Any]) -> Check:
    """A kind for a text option with a parser of its own (weights, JSON, a duration): the parser's refusal is the
    one line (a :class:`UsageError` as it is, any ``ValueError`` named with the flag)."""

    def check(flag: str, value: Any) -> None:
        if value is None or value == "":
            return
        try:
            parse(str(value))
        except UsageError:
            raise
        except ValueError as exc:
            raise UsageError(f"{flag} {value!r}: {exc}") from None

    return check


def is_numeric(kind: Any) -> bool:
    """Whether ``kind`` is one of the numeric ranges (a sweep feeds those nan, inf and -1)."""
    return isinstance(kind, ValueKind) and kind.numeric


def check_declared(parsed: Any, kinds: dict[str, tuple[str, Check]]) -> None:
    """Run each option's check on its parsed value (``kinds``: flag -> (dest, check)); the first bad one raises.

    Options this parser did not declare (another locustfile's) have no attribute and are skipped.
    """
    for flag, (dest, check) in kinds.items():
        if hasattr(parsed, dest):
            value = getattr(parsed, dest)
            for one in value if isinstance(value, list) else [value]:
                check(flag, one)


#: An embedded target's name -> a factory of its own command line's parser. The targets layer fills it when
#: imported (core imports no target); an embedded target that is never imported is never started either.
TARGET_PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {}


def parse_embedded_args(flag: str, raw: str, parser: argparse.ArgumentParser) -> list[str]:
    """``raw`` split as a command line and parsed by the target's own ``parser``; its numbers finite and not negative
    (a simulation knob of ``nan`` or ``-1`` would start a target that measures something else). Returns the words."""
    try:
        words = shlex.split(raw)
    except ValueError as exc:
        raise UsageError(f"{flag}: cannot split it as a command line ({exc})") from None

    def refuse(message: str) -> NoReturn:
        head, _, rest = message.partition(": ")
        if head == "unrecognized arguments":  # name the options only: a value next to them may be a token
            message = f"{head}: {' '.join(word for word in rest.split() if word.startswith('-')) or '(values)'}"
        raise UsageError(f"{flag}: {message}")

    parser.error = refuse  # type: ignore[method-assign]
    parsed = parser.parse_args(["--port", "0", *words])
    for name, value in vars(parsed).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value) or value < 0:
                raise UsageError(f"{flag}: --{name.replace('_', '-')} {value!r} must be a finite number, 0 or more")
    return words


def embedded_args(target: str) -> Check:
    """The kind of ``--<target>-embedded-args``: parsed by that target's own parser before the load."""

    def check(flag: str, value: Any) -> None:
        factory = TARGET_PARSERS.get(target)
        if value and factory is not None:
            parse_embedded_args(flag, str(value), factory())

    return check
