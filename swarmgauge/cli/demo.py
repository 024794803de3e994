"""``swarmgauge demo``: the reference pages reproduced on embedded targets, one command.

With no page, the quick default: the demarkus reads ramp (``locustfiles/demarkus_reads.py``, ``FetchUser``) over real
QUIC against the embedded Mark server with its bottleneck simulation (two 10 ms bucket round trips per read, 160
reads/s of capacity), so the knee at about 160 req/s shows beside the page's figures in about a minute.

``swarmgauge demo --all`` or ``swarmgauge demo PAGE...`` runs each page's workloads (``swarmgauge/cli/demo_pages.py``)
as headless Locust subprocesses, each into its own run folder under one demo folder, one progress line each (its
time, its exit against the one it declares, the demo's elapsed time and an estimate of what is left), then
writes the index (``report.md``, ``report.html``: ``reports/index.py``) into the demo folder. A page that cannot run
here says why and the others go on.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarmgauge.cli.demo_pages import (
    BUILDERS,
    Page,
    SharedProcess,
    Workload,
    end_shared,
    pages,
    reads_workload,
    start_shared,
)
from swarmgauge.cli.demo_phases import Phases, PhaseTotals, phase_text
from swarmgauge.cli.demo_progress import REPORT_S, Progress, minutes
from swarmgauge.cli.demo_reports import StartUpReports, render_reports
from swarmgauge.cli.demo_runs import BetweenLoads, StartedRun, abandon, finish_run, start_run
from swarmgauge.cli.demo_zygote import DEMO_PRELOAD, Zygote, ZygoteError

MANIFEST = "demo.json"


class DemoUsageError(ValueError):
    """A bad ``demo`` argument: one line, exit 2."""


def _positive(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 100:
        raise DemoUsageError(f"{option} {text!r}: must be a number above 0 (at most 100)")
    return value


def _non_negative(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise DemoUsageError(f"{option} {text!r}: must be a number of seconds from 0 (at most 3600)")
    return value


def _steps(text: str) -> list[int]:
    try:
        users = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        users = []
    if not users or min(users) < 1:
        raise DemoUsageError(f"--steps {text!r}: must be whole numbers of users, comma separated (1,4,16)")
    return users


def locust_command(
    workload: Workload,
    locustfile: Path,
    plan_path: Path | None,
    run_dir: Path,
    *,
    report: bool = True,
    handoff: Path | None = None,
) -> list[str]:
    """The headless Locust run of one workload (``locustfile``: its scenario as a file) into its own ``--run-dir``;
    ``report=False`` leaves the run's report, and the step tables of its console summary, to :func:`render_reports`
    (``--no-report --brief-summary``: the log keeps the verdicts and the exit's reasons); ``handoff``: its
    ``--handoff`` directory (``cli/demo_runs.py``)."""
    plan = ["--plan", str(plan_path)] if plan_path else []
    return [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(locustfile),
        *workload.options,
        "--headless",
        *plan,
        "--run-dir",
        str(run_dir),
        "--csv",
        str(run_dir / "locust"),
        "--only-summary",
        *([] if report else ["--no-report", "--brief-summary"]),
        *(["--handoff", str(handoff)] if handoff else []),
    ]


def start_workload(
    workload: Workload, run_dir: Path, log: Path | None, *, report: bool = True, zygote: Zygote | None = None
) -> StartedRun:
    """The workload's Locust process, started up and waiting for its go (``demo_runs.finish_run`` gives it);
    ``zygote``: forked from it, Locust imported already (``cli/demo_zygote.py``)."""
    return start_run(
        workload,
        run_dir,
        log,
        lambda locustfile, plan, handoff: locust_command(
            workload, locustfile, plan, run_dir, report=report, handoff=handoff
        ),
        zygote,
    )


def run_workload(
    workload: Workload,
    run_dir: Path,
    log: Path | None,
    *,
    report: bool = True,
    started: StartedRun | None = None,
    when_load_done: Callable[[], None] | None = None,
    on_phases: Callable[[Phases], None] | None = None,
    between: BetweenLoads | None = None,
) -> int:
    """One Locust subprocess in its own session, bounded by the plan's time plus start-up; its exit code.

    ``started``: its process, started ahead while the workload before it ended; ``when_load_done`` is called once
    its measurements are over (the demo starts the next workload's process then); ``on_phases``: given where its
    time went once it has ended (``cli/demo_phases.py``); ``between``: work done only while no load runs."""
    run = started or start_workload(workload, run_dir, log, report=report)
    return finish_run(run, when_load_done=when_load_done, on_phases=on_phases, between=between)


def gather_into_run_folder(run_dir: Path) -> Path:
    """Move what the demo itself put beside the run folders (Locust's ``--csv`` tables; the plan is copied) into the
    run's own folder, so the folder holds the whole run and a rerun overwrites nothing of it; returns that folder.

    The listeners write their own final, redacted ``locust_stats.csv`` and friends there: a copy the folder has
    already is the same table and is dropped; what it lacks (the stats history, the plan) moves in."""
    from swarmgauge.run_folders import resolve

    found = resolve(run_dir)
    if found == run_dir or not found.is_dir():
        return found
    for path in [*run_dir.glob("locust_*.csv"), run_dir / "plan.yaml"]:
        if not path.is_file():
            continue
        if path.name == "plan.yaml":
            shutil.copyfile(path, found / path.name)  # the run's options name this path: it stays
        elif (found / path.name).exists():
            path.unlink()
        else:
            path.replace(found / path.name)
    return found


def _keep_phases(entry: dict[str, Any], phases: Phases) -> None:
    entry["phases_s"] = phases.seconds()


def _save(folder: Path, manifest: dict[str, Any]) -> None:
    from swarmgauge.files import write_json

    write_json(folder / MANIFEST, manifest)


def _forking_ready(zygote: Zygote, manifest: dict[str, Any]) -> list[Zygote]:
    """The forking process once its imports are done ([] when it failed: the workloads start as fresh processes, as
    the line says), its time from the demo's start in the manifest."""
    try:
        zygote.wait_ready()
    except ZygoteError as exc:
        print(f"workload processes: fresh ones, the forking process failed ({exc})", flush=True)
        return []
    manifest["forking_ready_s"] = round(time.time() - manifest["started_at"], 1)
    preloaded = " and ".join(DEMO_PRELOAD)
    print(
        f"workload processes: the first one fresh, the others forked from one with {preloaded} imported "
        f"(ready {manifest['forking_ready_s']} s into the demo)",
        flush=True,
    )
    return [zygote]


def run_pages(chosen: list[Page], parent: Path, scale: float | None = None) -> int:
    """Every workload of every runnable page, the manifest after each, then the index; 1 when a run left no folder.

    ``scale`` (the pages' ``--scale``) is kept in the manifest: the index weighs the time taken against its budget."""
    from swarmgauge.reports.index import index_sections, pages_ready, write_index
    from swarmgauge.reports.index_grades import exit_state
    from swarmgauge.reports.index_scale import budget_minutes
    from swarmgauge.run_folders import new_run_folder

    folder = new_run_folder(parent)
    manifest: dict[str, Any] = {"started_at": time.time(), "machine": {"cpus": os.cpu_count()}, "pages": []}
    if scale is not None:
        manifest["scale"] = scale
    todo: list[tuple[Page, Workload, dict[str, Any]]] = []
    plans: list[str] = []
    for page in chosen:
        reason = page.unavailable()
        entry: dict[str, Any] = {"name": page.name, "title": page.title, "reference": page.reference, "skipped": reason}
        entry["workloads"] = [
            {"name": w.name, "what": w.what, "folder": f"{page.name}/{w.name}", "expected_exit": w.expected_exit}
            for w in page.workloads
        ]
        manifest["pages"].append(entry)
        if reason:
            print(f"{page.name}: skipped, {reason}", flush=True)
            continue
        planned = sum(w.planned_seconds() for w in page.workloads)
        plans.append(f"{page.name}: {len(page.workloads)} workloads, {minutes(planned)} of load planned")
        todo += [(page, w, entry["workloads"][i]) for i, w in enumerate(page.workloads)]
    progress = Progress([w.planned_seconds() for _page, w, _entry in todo], reports_s=REPORT_S if todo else 0.0)
    print(f"demo: {len(todo)} workloads, {progress.opening()}, into {folder}", flush=True)
    print("; ".join(plans) + f" (--all's budget at --scale {scale or 1:g}: {budget_minutes(scale or 1.0):.3g} min)")
    speed = manifest["machine"]["probe_ms"] = {"start": _probe("start")}  # before any load: reports/index.py says it
    _save(folder, manifest)
    lost = 0
    totals = PhaseTotals()
    reports = StartUpReports()  # each run's report, rendered while the next workload starts up
    ahead: list[StartedRun] = []  # the next workload's process, started while this one ends
    # Locust imported once, each workload's process forked from it; its imports go on beside the first workload's
    # start-up (that one a fresh process), and the first go waits for them, so they are under no load
    zygote = Zygote(wait=False) if todo else None
    forked: list[Zygote] = []

    shared: dict[str, SharedProcess | None] = {}  # each page's shared process, once its first workload starts

    def share(page: Page) -> None:
        if page.shared is not None and page.name not in shared:
            shared[page.name] = start_shared(page)

    def start_next(number: int) -> None:
        if number < len(todo):
            following_page, following, following_entry = todo[number]
            share(following_page)
            following_dir = folder / following_entry["folder"]
            log = following_dir.parent / f"{following.name}.log"
            forking = forked[0] if forked else None
            ahead.append(start_workload(following, following_dir, log, report=False, zygote=forking))

    loads_over = False
    try:
        if todo:
            start_next(0)
        if zygote is not None:
            forked += _forking_ready(zygote, manifest)
        for number, (page, workload, entry) in enumerate(todo, start=1):
            run_dir = folder / entry["folder"]
            print(progress.starting(number, f"{page.name}/{workload.name}", workload.what), end="", flush=True)
            share(page)  # started ahead with the workload, unless that one was not
            started = ahead.pop() if ahead else None
            began = time.monotonic()
            if started is not None:
                entry["started_ahead_s"] = round(began - started.started, 1)  # start-up under the one before's end
            code = run_workload(
                workload,
                run_dir,
                run_dir.parent / f"{workload.name}.log",
                report=False,
                started=started,
                when_load_done=functools.partial(start_next, number),
                on_phases=functools.partial(_keep_phases, entry),
                between=reports,
            )
            entry["elapsed_s"] = round(time.monotonic() - began, 1)
            entry["planned_s"] = workload.planned_seconds()
            entry["exit_code"] = code
            entry["load_avg"] = round(os.getloadavg()[0], 1)
            found = gather_into_run_folder(run_dir)
            has_steps = (found / "steps.csv").is_file()
            entry["run_folder"] = str(found.relative_to(folder)) if has_steps else None
            lost += not has_steps
            if found.is_dir() and (found / "run.json").is_file():
                reports.add(found)
            shown = found if has_steps else f"no run folder (see {run_dir.parent / (workload.name + '.log')})"
            state = exit_state(code, workload.expected_exit)[1]
            done = progress.finished(entry["elapsed_s"])
            spent = entry.get("phases_s") or {}
            totals.add(spent, entry["planned_s"])
            phased = f" ({phase_text(spent)})" if spent else ""
            print(f" {entry['elapsed_s']:.0f} s{phased}, {state}: {shown}; {done}", flush=True)
            _save(folder, manifest)
        loads_over = True
        reports.pause()  # the renderer on the other core would slow the probe's: it resumes in render_rest
        speed["end"] = _probe("end")
    finally:
        for started in ahead:
            abandon(started)
        for process in shared.values():
            end_shared(process)
        if zygote is not None:
            zygote.close()
        if not loads_over:
            reports.finish()
    # no load is left: the start-up renderer (its imports done) renders the rest while this process draws the index's
    # pages; a fresh process per core only for what it could not render
    rendering = time.monotonic()
    early = len(reports.rendered) + len(reports.failed)
    last = reports.pending
    reports.render_rest()
    drawn = pages_ready(folder, reports.unrendered())
    left = reports.wait_rest()
    _more, processes, failed = render_reports(left)
    sections = index_sections(folder, drawn)
    took = time.monotonic() - rendering
    warm = last - len(left)
    print(
        f"reports: {early + last} run reports, {early} rendered while workloads started up, {last} in {took:.0f} s "
        f"({warm} by that renderer, {len(left)} on {processes} more process(es)), the index's pages drawn beside them",
        flush=True,
    )
    for why in reports.failed + failed:
        print(f"reports: could not render {why}", flush=True)
    manifest["ended_at"] = time.time()
    _save(folder, manifest)
    indexing = time.monotonic()
    paths = write_index(folder, sections)
    print(f"index: {paths[1]} ({paths[0].name}); {(manifest['ended_at'] - manifest['started_at']) / 60:.1f} min")
    print(totals.text(took, time.monotonic() - indexing, time.time() - manifest["started_at"]), flush=True)
    return 1 if lost else 0


def _probe(when: str) -> float:
    """The host-speed probe's CPU ms (``core/host_speed.py``), said on the console."""
    from swarmgauge.core.host_speed import REFERENCE_MS, probe_ms, slowdown

    measured = round(probe_ms(), 1)
    print(f"host speed at the {when}: {measured:g} ms ({slowdown(measured):.2f}x the reference {REFERENCE_MS:g} ms)")
    return measured


def quick(run_dir: Path, steps: list[int], step_time: float, warmup: float) -> int:
    """The quick default: the reads ramp with the bottleneck simulation, its output on the console."""
    workload = reads_workload(steps, step_time, warmup)
    print(f"running: demarkus reads {','.join(map(str, steps))} users against the simulated ~160 req/s bucket")
    code = run_workload(workload, run_dir, None)
    found = gather_into_run_folder(run_dir)
    print(f"results: {found} (steps.csv, run.json, slo.json, locust_*.csv, plan.yaml, report.md, report.html)")
    return code


#: the scales ``demo --list`` plans at: the issue's two budgets (``reports/index_scale.py``)
LISTED_SCALES = (0.25, 1.0)


def list_pages(scale: float | None = None) -> str:
    """Each page and its workloads with the load seconds planned at the listed scales (and ``scale`` when another),
    then the whole demo's."""
    scales = sorted({*LISTED_SCALES, *([scale] if scale else [])})
    at = {s: pages([], s) for s in scales}
    heads = " / ".join(f"--scale {s:g}" for s in scales)
    lines = [f"load seconds planned at {heads} (start-up and the reports come on top)"]
    for number, page in enumerate(at[1.0]):
        planned = [sum(w.planned_seconds() for w in at[s][number].workloads) for s in scales]
        lines.append(f"{page.name:9} {page.title} ({page.reference}): {_planned(planned)}")
        for index, workload in enumerate(page.workloads):
            each = [at[s][number].workloads[index].planned_seconds() for s in scales]
            lines.append(f"    {workload.name:15} {workload.what} ({_planned(each)})")
    totals = [sum(w.planned_seconds() for p in at[s] for w in p.workloads) for s in scales]
    lines.append(f"all pages: {_planned(totals)}")
    return "\n".join(lines)


def _planned(seconds: list[float]) -> str:
    return " / ".join(f"{value:.0f}" for value in seconds) + " s"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="swarmgauge demo", description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", metavar="PAGE", help=f"reference pages to run: {', '.join(BUILDERS)}")
    parser.add_argument("--all", action="store_true", help="run every page's workloads and write the index")
    parser.add_argument("--list", action="store_true", help="print the pages and their workloads")
    parser.add_argument("--run-dir", default="runs/demo", help="where the results go (default runs/demo)")
    parser.add_argument("--scale", default="1", help="stretch (>1) or shrink (<1) every page's holds (default 1)")
    parser.add_argument("--steps", default="1,4,16,64", help="quick default: users per step (default 1,4,16,64)")
    parser.add_argument("--step-time", default="10", help="quick default: seconds per step (default 10)")
    parser.add_argument("--warmup", default="2", help="quick default: seconds of each step left out of its statistics")
    args = parser.parse_args(argv)
    try:
        unknown = [name for name in args.pages if name not in BUILDERS]
        if unknown:
            raise DemoUsageError(f"unknown page {unknown[0]!r}: choose from {', '.join(BUILDERS)} (or --all)")
        if args.list:
            print(list_pages(_positive(args.scale, "--scale")))
            return 0
        run_dir = Path(args.run_dir).resolve()
        if args.all or args.pages:
            scale = _positive(args.scale, "--scale")
            return run_pages(pages([] if args.all else list(dict.fromkeys(args.pages)), scale), run_dir, scale)
        return quick(
            run_dir,
            _steps(args.steps),
            _positive(args.step_time, "--step-time"),
            _non_negative(args.warmup, "--warmup"),
        )
    except DemoUsageError as exc:
        print(f"swarmgauge demo: {exc}", file=sys.stderr)
        return 2
