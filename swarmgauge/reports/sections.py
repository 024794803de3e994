"""What a report section module returns: the same content for report.md, report.html and summary.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Section:
    """One report section; ``html`` is a fragment (no <html>/<body>), ``summary`` goes to summary.json[title]."""

    title: str
    markdown: str
    html: str
    summary: dict[str, Any] = field(default_factory=dict)
