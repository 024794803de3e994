"""Server-supplied words in a failure's message, cut down to a bounded set.

Locust groups failures by the exception's text, so anything in it that varies per answer (a body, an id, a count, a
payload) makes one failures row per answer: kneo's bodies made 13,796 rows in 12 s. A code or status the server
sends is kept only as words of letters; a number, an id or any other word becomes ``#``.
"""

from __future__ import annotations

import re

MAX_REASON = 40
_WORD = re.compile(r"[A-Za-z]+(?:[_.\-][A-Za-z]+)*")


def bounded_reason(text: object, limit: int = MAX_REASON) -> str:
    """``text`` as a failure name may carry it: each space-separated word of ASCII letters (joined by ``_ - .``) kept,
    any other (a number, an id, punctuation, a quote of a body) as one ``#`` for a run of them, at most ``limit``
    characters; ``other`` when no word is left."""
    kept: list[str] = []
    for word in str(text).split(None, limit)[:limit]:
        shown = word if len(word) <= limit and _WORD.fullmatch(word) else "#"
        if shown != "#" or not kept or kept[-1] != "#":
            kept.append(shown)
    reduced = " ".join(kept)[:limit].strip()
    return reduced if any(c.isalpha() for c in reduced) else "other"
