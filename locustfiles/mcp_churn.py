"""MCP session churn against an MCP gateway, and the gateway-vs-direct FETCH comparison.

The default plan is the demarkus page's churn: 5 new sessions a second (initialize, initialized, one
``tools/call``, never DELETE) for 40 minutes. Without ``--host`` the locustfile starts the reference Mark server
and the MCP gateway in front of it (``swarmgauge target mcp --mark URL``; ``--mcp-embedded-args`` passes gateway
options such as ``"--session-idle-timeout 60 --json-response"``), samples the gateway's RSS (``psutil:pid=``)
and its live-session gauge (``/metrics``), and stops both when Locust quits, at the run's ``targets stopped`` step
like every embedded target (``swarmgauge/targets/embedded.py``; a web UI's STOP keeps them for the next START)::

    locust -f locustfiles/mcp_churn.py --headless --run-dir runs/churn            # 5 sessions/s, 40 min
    locust -f locustfiles/mcp_churn.py --headless --mcp-churn-rate 10 -t 5m       # 10 sessions/s, run.json says so
    locust -f locustfiles/mcp_churn.py --headless --plan my-churn.yaml --run-dir runs/churn
    locust -f locustfiles/mcp_churn.py --headless --mcp-scenario compare --run-dir runs/compare

``MCPToolUser`` is one long session calling ``--mcp-tool`` with ``--mcp-args`` (any tool, any arguments), with
``tools/list`` at ``--mcp-list-weight`` against 1: name it in a plan's ``user_classes``. ``--host`` may carry the
endpoint's path (``http://127.0.0.1:3001/mcp``); ``--mcp-protocol 2026-07-28`` makes each churn "session" one
self-contained ``tools/call`` (that version has no handshake and no server-side session).

``--mcp-scenario compare`` runs ``MCPFetchUser`` (``tools/call mark_fetch`` through the gateway) and then
``DirectFetchUser`` (the same documents by QUIC ``FETCH`` on the Mark server behind it), one user each for
``--mcp-compare-time``; ``swarmgauge report`` states the p50 difference. Against a gateway you started yourself
give ``--host http://127.0.0.1:PORT`` and, for the direct row, ``--mcp-direct-mark mark://127.0.0.1:PORT``.
"""

from __future__ import annotations

import logging
import random
import shlex
from typing import Any

from locust import events, task
from locust.env import Environment
from locust.runners import WorkerRunner

import swarmgauge.locust  # noqa: F401 - steps, SLOs, resources, run directory
from swarmgauge import shapes
from swarmgauge.core import option_kinds
from swarmgauge.core.durations import parse_duration
from swarmgauge.core.options import add_option
from swarmgauge.errors import SwarmgaugeError, UsageError, stop_on_usage_error
from swarmgauge.listeners.resources import add_sample_source
from swarmgauge.plans.plan import Plan, build_plan, read_plan_doc
from swarmgauge.shapes.overrides import add_override
from swarmgauge.targets import embedded
from swarmgauge.targets.launch import launch_target
from swarmgauge.targets.mark.seed import corpus_paths
from swarmgauge.targets.mcp_gateway import launch, launch_beside_mark
from swarmgauge.users import mcp_user as mcp_users
from swarmgauge.users.mark_user import MarkUser

log = logging.getLogger(__name__)
CORPUS = 300
CHURN_PLAN = "mcp-churn"  # swarmgauge/plans/mcp-churn.yaml: 5 sessions/s for 40 min, MCPChurnUser only
FETCH_NAME = "/corpus/{topic}/{doc}"
#: the gateway's /metrics the sampler records: live sessions, the sweeps, the dedup store's WARN lines
GATEWAY_METRICS = (
    "mcp_gateway_sessions_live",
    "mcp_gateway_sessions_swept",
    "mcp_gateway_sweeps",
    "mcp_gateway_sweep_largest",
    "mcp_gateway_swept_idle_min_seconds",
    "mcp_gateway_swept_idle_max_seconds",
    "mcp_gateway_dedup_warn_lines",
    "mcp_gateway_dedup_sessions_after_full",
)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--mcp-scenario",
        choices=("churn", "compare"),
        default="churn",
        include_in_web_ui=True,
        help="default plan when no --plan/--rate is given: churn (5/s, 40 min) or compare "
        "(gateway mark_fetch, then direct FETCH, 1 user each)",
    )
    add_option(
        parser,
        "--mcp-compare-time",
        default="30s",
        include_in_web_ui=True,
        help="hold of each half of --mcp-scenario compare",
    )
    add_option(
        parser,
        "--mcp-embedded-args",
        kind=option_kinds.embedded_args("mcp"),
        default="",
        include_in_web_ui=False,
        help="options for the embedded gateway started when --host is empty",
    )
    add_option(
        parser,
        "--mcp-mark-args",
        default="",
        include_in_web_ui=False,
        help="options for the embedded Mark server behind the embedded gateway (e.g. the page's bottleneck: "
        "'--read-delay-ms 10 --reads-stat-head --backend-rps 160')",
    )
    add_option(
        parser,
        "--mcp-direct-mark",
        default="",
        include_in_web_ui=True,
        help="Mark server DirectFetchUser reads (default: the embedded gateway's)",
    )


class MCPChurnPlan(shapes.PlanShape):
    """``--plan``/``--rate`` when given; otherwise the churn plan, or the comparison with ``--mcp-scenario``."""

    def fallback_plan(self, options: Any) -> Plan:
        if getattr(options, "mcp_scenario", "churn") != "compare":
            return churn_plan(getattr(options, "mcp_churn_rate", None))
        hold = parse_duration(getattr(options, "mcp_compare_time", "30s"), "--mcp-compare-time")
        # Locust keeps its users when only the class changes at the same count: a second at 0 users swaps them.
        stages = [
            {"label": "gateway mark_fetch", "users": 1, "duration": hold, "user_classes": ["MCPFetchUser"]},
            {"label": "switch", "users": 0, "duration": 1},
            {"label": "direct FETCH", "users": 1, "duration": hold, "user_classes": ["DirectFetchUser"]},
        ]
        return build_plan({"name": "mcp-gateway-vs-direct", "kind": "stages", "stages": stages}, source="mcp_churn.py")


def churn_plan(rate: float | None) -> Plan:
    """The churn plan; ``--mcp-churn-rate`` (the web form's Mcp Churn Rate), when given, is its rate, and it says so."""
    doc, source = read_plan_doc(CHURN_PLAN)
    if rate is None:
        return build_plan(doc, source=source)
    plan = build_plan({**doc, "rate": rate}, source=source)
    add_override(
        plan,
        "--mcp-churn-rate",
        rate,
        f"--mcp-churn-rate {rate:g} replaces the {doc['rate']:g} sessions/s of plan {plan.name!r}",
    )
    return plan


class _CorpusDocs:
    """A deterministic random corpus document per call, the same sequence for the gateway and the direct user."""

    def corpus_url(self) -> str:
        if not hasattr(self, "_docs"):
            self._docs = corpus_paths(CORPUS)
            self._random = random.Random(6309)
        return self._random.choice(self._docs)


class MCPChurnUser(mcp_users.MCPChurnUser):
    """A new session per ticket: initialize, initialized, ``tools/call --mcp-tool``, no DELETE."""

    abstract = False


class MCPFetchUser(_CorpusDocs, mcp_users.MCPFetchUser):
    """``tools/call mark_fetch`` of corpus documents in one long session."""

    abstract = False

    def one_call(self) -> None:
        self.call_with_recovery("mark_fetch", {"url": self.corpus_url()})


class MCPLookupAllUser(mcp_users.MCPLookupAllUser):
    abstract = False


class MCPToolUser(mcp_users.MCPToolUser):
    """One long session calling ``--mcp-tool`` with ``--mcp-args``, with ``tools/list`` at ``--mcp-list-weight``."""

    abstract = False


class DirectFetchUser(_CorpusDocs, MarkUser):
    """The same documents by QUIC FETCH, straight to the Mark server behind the gateway."""

    abstract = False

    def __init__(self, environment: Environment) -> None:
        type(self).host = _direct_mark_url(environment)
        super().__init__(environment)

    @task
    def fetch(self) -> None:
        self.client.fetch(self.corpus_url(), name=FETCH_NAME)


def _direct_mark_url(environment: Environment) -> str:
    url = getattr(environment.parsed_options, "mcp_direct_mark", "") or ""
    if not url:
        raise UsageError("DirectFetchUser needs --mcp-direct-mark mark://HOST:PORT (set by the embedded gateway)")
    return url


class EmbeddedGateway:
    """The reference Mark server and the gateway in front of it; the gateway has no children, so its RSS is its own.
    Once both run, they are handed to the ``targets stopped`` step: the gateway stops first, then the Mark server."""

    def __init__(self) -> None:
        self.mark: Any = None
        self.gateway: Any = None

    def start(self, gateway_args: list[str], mark_args: list[str] | None = None) -> Any:
        """Side by side (the gateway told the server's URL once it is up), unless ``gateway_args`` name a Mark server
        of their own: then it is the one the gateway fronts, as when they came after ``--mark`` here."""
        mark_command = ["--port", "0", "--seed-corpus", str(CORPUS), *(mark_args or [])]
        try:
            if any(arg == "--mark" or arg.startswith("--mark=") for arg in gateway_args):
                self.mark = launch_target("mark", mark_command)
                self.gateway = launch(["--mark", self.mark.url, *gateway_args])
            else:
                self.mark, self.gateway = launch_beside_mark(mark_command, gateway_args)
        except BaseException:
            self.stop()
            raise
        embedded.stop_at_end(self.mark, "Mark server")
        embedded.stop_at_end(self.gateway, "MCP gateway")
        return self.gateway

    def stop(self) -> None:
        """A start that failed half-way: stop what did start."""
        for name in ("gateway", "mark"):
            process = getattr(self, name)
            if process is not None:
                setattr(self, name, None)
                status = process.stop()
                log.info(
                    "stopped the embedded %s (exit %s)", "MCP gateway" if name == "gateway" else "Mark server", status
                )


_embedded = EmbeddedGateway()


def start_embedded(environment: Environment) -> None:
    """No ``--host`` on the master or a local run: start the gateway, point every user at it, sample it."""
    if environment.host or isinstance(environment.runner, WorkerRunner):
        return

    options = environment.parsed_options
    try:
        gateway_args = shlex.split(getattr(options, "mcp_embedded_args", "") or "")
        mark_args = shlex.split(getattr(options, "mcp_mark_args", "") or "")
    except ValueError as exc:
        raise UsageError(f"--mcp-embedded-args / --mcp-mark-args: cannot split them ({exc})") from None
    try:
        gateway = _embedded.start(gateway_args, mark_args)
    except (SwarmgaugeError, OSError) as exc:
        raise UsageError(f"could not start the embedded MCP gateway: {exc}") from None
    environment.host = gateway.base_url
    if options is not None:
        options.host = gateway.base_url
        options.mark_insecure = True
        if not options.mcp_direct_mark:
            options.mcp_direct_mark = gateway.mark_url
    add_sample_source(environment, f"psutil:pid={gateway.pid}")
    add_sample_source(environment, f"prom:{gateway.base_url}/metrics#{','.join(GATEWAY_METRICS)}")
    log.info(
        "no --host given: started the embedded MCP gateway at %s (pid %d) in front of %s",
        gateway.url,
        gateway.pid,
        gateway.mark_url,
    )


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    stop_on_usage_error(start_embedded, environment)
