"""``--slo-junit FILE``: the SLO verdicts as JUnit XML, the file CI dashboards read (k6 and Gatling write one too).

One ``testcase`` per SLO (classname ``swarmgauge.slo``, name the expression): a failed or no-data verdict carries a
``failure`` with the observed value and the threshold in the threshold's unit, a "not reached (cut short)" verdict
is ``skipped`` with why. The ``testsuite`` records the run's exit code and its reasons (``properties`` and
``system-out``), so a run that failed for user-code exceptions with every SLO passing does not read as green without
saying why. Written at the end of the run (a cut-short or aborted run too), relative to the working directory,
atomically and private (0600, as the run folder's files); built with the standard library's ``xml.etree``.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from locust.env import Environment

from swarmgauge.core.slo_units import in_unit
from swarmgauge.errors import UsageError
from swarmgauge.files import write_atomic
from swarmgauge.listeners import run_redaction
from swarmgauge.listeners.outcome import FAILING, NOT_REACHED, Outcome

logger = logging.getLogger("swarmgauge.slo_junit")

SUITE_NAME = "swarmgauge SLOs"
CLASS_NAME = "swarmgauge.slo"


def junit_path(environment: Environment) -> Path | None:
    """``--slo-junit`` as a path (relative to the working directory), or None when not asked for."""
    value = getattr(getattr(environment, "parsed_options", None), "slo_junit", None)
    return Path(value) if value else None


def validate(environment: Environment) -> None:
    """The file can be written where asked: its folder exists and it is not itself a folder (exit 2 before load)."""
    path = junit_path(environment)
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"--slo-junit {path}: is a directory; give a file name such as {path / 'slo-junit.xml'}")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"--slo-junit {path}: folder {folder} does not exist; create it or choose another path")


def _message(verdict: dict[str, Any]) -> str:
    unit, metric = verdict.get("unit", ""), verdict.get("metric", "")
    observed = in_unit(verdict.get("observed"), unit, metric)
    threshold = in_unit(verdict.get("value"), unit, metric) if verdict.get("value") is not None else "?"
    where = f" at {verdict['worst_step']}" if verdict.get("worst_step") else ""
    why = f": {verdict['reason']}" if verdict.get("reason") else ""
    return f"{metric} observed {observed}{where}, threshold {verdict.get('op', '')} {threshold}{why}"


def junit_xml(verdicts: list[dict[str, Any]], decided: Outcome) -> str:
    """The JUnit XML document for these verdicts and the run's exit code."""
    failures = sum(1 for v in verdicts if v.get("status") in FAILING)
    skipped = sum(1 for v in verdicts if v.get("status") == NOT_REACHED)
    suite = ET.Element(
        "testsuite",
        name=SUITE_NAME,
        tests=str(len(verdicts)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
    )
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="exit_code", value=str(decided.code))
    for index, reason in enumerate(decided.reasons):
        ET.SubElement(properties, "property", name=f"exit_reason_{index + 1}", value=reason)
    for verdict in verdicts:
        case = ET.SubElement(suite, "testcase", classname=CLASS_NAME, name=str(verdict.get("expr")))
        status = verdict.get("status")
        if status in FAILING:
            failure = ET.SubElement(case, "failure", message=f"{status}: {_message(verdict)}", type=str(status))
            failure.text = _message(verdict)
        elif status == NOT_REACHED:
            ET.SubElement(case, "skipped", message=f"{NOT_REACHED}: {verdict.get('reason', '')}")
    ET.SubElement(suite, "system-out").text = "\n".join(decided.lines())
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def write_if_asked(environment: Environment, verdicts: list[dict[str, Any]], decided: Outcome) -> Path | None:
    """Write the file when ``--slo-junit`` asks for it; a write that fails (disk full) is logged, the run's own files
    and exit code stand."""
    path = junit_path(environment)
    if path is None:
        return None
    try:
        write_atomic(path, run_redaction.redact(junit_xml(verdicts, decided), environment))
    except OSError as exc:
        logger.error("could not write --slo-junit %s: %s", path, exc)
        return None
    return path
