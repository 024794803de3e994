"""Embedded defaults: with no ``--host``, a locustfile starts its target itself and stops it when Locust quits.

On the master (or in a local run) the target is started as a child process on a free loopback port and
``environment.host`` is set, so Locust hands it to the workers with every spawn; workers never start one. Every
embedded target stops at the run's last step, ``targets stopped`` (``core/lifecycle.py``), last started first; a
locustfile that launches its targets itself (a gateway in front of a server) hands each to :func:`stop_at_end`.
A web UI's STOP keeps them for the next START.
"""

from __future__ import annotations

import atexit
import logging
import shlex
from typing import Any

from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core import hooks, run_context
from swarmgauge.core.lifecycle import at_end
from swarmgauge.targets.launch import TargetProcess, launch_target

log = logging.getLogger(__name__)

SECRET_FLAGS = ("--publish-token", "--api-key", "--token", "--dsn")
_running: list[tuple[TargetProcess, str]] = []


def redact_args(args: list[str]) -> list[str]:
    """Options as logged: the value of any secret-bearing flag shown as ``***``."""
    shown, hide_next = [], False
    for arg in args:
        flag = arg.split("=", 1)[0]
        if hide_next:
            shown.append("***")
        elif "=" in arg and flag in SECRET_FLAGS:
            shown.append(f"{flag}=***")
        else:
            shown.append(arg)
        hide_next = arg in SECRET_FLAGS
    return shown


def start_embedded(
    environment: Environment, name: str, args: list[str], *, env: dict[str, str] | None = None, describe: str = ""
) -> TargetProcess | None:
    """Start ``swarmgauge target NAME ARGS`` unless a host is set or this is a worker; sets the host."""
    if environment.host or isinstance(environment.runner, WorkerRunner):
        return None
    target = launch_target(name, args, env=env)
    stop_at_end(target)
    environment.host = target.url
    if environment.parsed_options is not None:
        environment.parsed_options.host = target.url
    log.info(
        "no --host given: started the embedded %s at %s (pid %d%s; %s)",
        name,
        target.url,
        target.pid,
        f", {describe}" if describe else "",
        " ".join(redact_args(args)),
    )
    _sample_as_target(environment, name, target, args)
    return target


def _sample_as_target(environment: Environment, name: str, target: TargetProcess, args: list[str]) -> None:
    """The embedded target is the target: its CPU and memory are sampled as such (its pid is known), never as the
    generator's; run.json names it, with its options, so the report can say which process the figures are and
    whether it was configured like a reference page's."""
    import sys

    rundir = sys.modules.get("swarmgauge.listeners.rundir")
    if rundir is not None:
        record = {"pid": target.pid, "url": target.url, "args": redact_args(args)}
        rundir.add_run_info(environment, "embedded_targets", {name: record})
    resources = sys.modules.get("swarmgauge.listeners.resources")
    if resources is not None:
        resources.add_sample_source(environment, f"psutil:pid={target.pid}")


def stop_at_end(target: TargetProcess, describe: str = "") -> None:
    """Stop ``target`` at the ``targets stopped`` step (or at exit), after those started before it; ``describe`` is
    what the log calls it (its target name otherwise)."""
    _running.append((target, describe or target.name))


def stopped_at_end() -> list[TargetProcess]:
    """The targets the ``targets stopped`` step will stop, in the order they were handed over."""
    return [target for target, _describe in _running]


def stop_embedded() -> None:
    while _running:
        target, describe = _running.pop()
        status = target.stop()
        log.info("stopped the embedded %s (exit %s)", describe, status)


@at_end("targets stopped")
def _on_quitting(_environment: Any) -> None:
    """The last step of a run's end (``core/lifecycle.py``), after its users stopped (a target stopped while they
    ran made failures that never happened) and its folder closed. Not at ``quit``: the end-of-run summary, printed
    there, stays the last thing a user reads."""
    stop_embedded()


atexit.register(stop_embedded)


BRAIN_GAUGES = ("brain_model_loads", "brain_zombie_children", "brain_pinned_results", "brain_searches")


def start_embedded_brain(environment: Environment) -> None:
    """With no ``--host``: start the brain stand-in (``--brain-embedded-args``) and sample its RSS by pid."""
    extra = shlex.split(getattr(run_context.options(environment), "brain_embedded_args", "") or "")
    target = start_embedded(environment, "brain", ["--port", "0", *extra], describe="2dph brain stand-in")
    if target is not None:
        hooks.add_sample_source(environment, f"psutil:pid={target.pid}")
        # the page's counts beside the memory: model loads (one per process after the fix), zombie children,
        # unclosed results (the buffer pool)
        hooks.add_sample_source(environment, f"prom:{target.url}/metrics#{','.join(BRAIN_GAUGES)}")
