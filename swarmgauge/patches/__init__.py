"""Every change swarmgauge makes to a dependency at run time, and every private name of one that it reads, in one list.

The patch code stays where it works (the module named by ``where``); this registry says what each one changes, for
which versions of the dependency it was written and checked, why, what to ask upstream so it can go, and which of the
dependency's private names it touches. ``tests/patches/test_registry.py`` fails when an installed version leaves a
patch's range or the patched thing is gone or behaves otherwise, and ``tests/test_layers.py`` allows a third-party
private name (``x._name``) only in a patch's ``where`` and only if the patch lists it.

Pure data: it imports nothing of the project or of the dependencies, so any layer may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    """How a patch reaches into its dependency."""

    REPLACES = "replaces the dependency's functions or classes, process-wide"
    REPLACES_FOR_A_CALL = "replaces a function of the dependency for the length of one call"
    REWRITES_ARGUMENTS = "rewrites the arguments our code's call passes through the dependency"
    SUBCLASSES = "subclasses a class of the dependency and overrides a private method"
    READS_PRIVATE = "reads (or sets) private fields of the dependency's objects"
    MUTATES = "trims or rewrites the dependency's own data structures"
    FILTERS_LOG = "drops one of the dependency's log records"
    SETS_DEFAULT = "changes the default of one of the dependency's documented settings"


#: The versions of each dependency its patches were written for and checked against, as a PEP 440 specifier: one
#: range per dependency, so a new release is re-checked, and the range moved, once for all of its patches.
CHECKED_VERSIONS: dict[str, str] = {
    "qh3": ">=2.1,<2.2",
    "aioquic": ">=1.2,<1.8",
    "locust": ">=2.43.4,<2.48",
    "hdrhistogram": ">=0.10.3,<0.11",
    "mcp": ">=2.3,<2.4",
    "uvicorn": ">=0.55,<0.56",
    "gevent": ">=24.2,<27",
    "python": ">=3.11,<3.15",
}


@dataclass(frozen=True)
class Patch:
    """One runtime change to a dependency (or one set of private fields read), with what is needed to retire it."""

    name: str
    #: the distribution as pip names it (``python`` for the standard library); a key of :data:`CHECKED_VERSIONS`
    dependency: str
    kind: Kind
    #: our modules that hold the patch code, dotted
    where: tuple[str, ...]
    #: what of the dependency it changes or reads, dotted from the dependency's top package
    touches: tuple[str, ...]
    #: the private attribute names (``x._name``) our code in ``where`` reads or writes for it
    private_names: tuple[str, ...]
    why: str
    #: the issue or pull request to file upstream so the patch can go
    upstream: str

    @property
    def versions(self) -> str:
        """The versions it was written for and checked against, as a PEP 440 specifier (its dependency's)."""
        return CHECKED_VERSIONS[self.dependency]


PATCHES: tuple[Patch, ...] = (
    Patch(
        name="gevent-no-spawn-records",
        dependency="gevent",
        kind=Kind.SETS_DEFAULT,
        where=("swarmgauge.locust",),
        touches=("gevent.config.track_greenlet_tree",),
        private_names=(),
        why="on (gevent's default) every Greenlet records the stack that spawned it (up to 10 frame records, a weak "
        "reference and a dict): ~340 B per Locust user for the whole run, read only by gevent's debugging dumps; "
        "off unless GEVENT_TRACK_GREENLET_TREE is set, which then decides as gevent documents",
        upstream="locust: issue asking Locust to spawn its users with gevent.config.track_greenlet_tree off (or "
        "without a spawn tree) since nothing in Locust reads it",
    ),
    Patch(
        name="qh3-faster-tls",
        dependency="qh3",
        kind=Kind.REPLACES,
        where=("swarmgauge.quic.qh3_patches",),
        touches=(
            "qh3.tls.push_block",
            "qh3.tls.push_extension",
            "qh3.tls.pull_block",
            "qh3.tls.hkdf_expand_label",
            "qh3.tls.hkdf_extract",
            "qh3.quic.crypto.hkdf_expand_label",
        ),
        private_names=(),
        why="a fresh connection's CPU is mostly qh3's Python TLS 1.3: ~70 generator-based context managers and ~30 "
        "HKDF expansions building hmac.HMAC objects per handshake; the replacements compute the same bytes cheaper",
        upstream="jawah/qh3: PR making push_block/push_extension/pull_block plain classes and HKDF use hmac.digest",
    ),
    Patch(
        name="qh3-stream-limits",
        dependency="qh3",
        kind=Kind.REWRITES_ARGUMENTS,
        where=("swarmgauge.quic.engine", "swarmgauge.quic.engine_base", "swarmgauge.quic.qh3_patches"),
        touches=(
            "qh3.quic.connection.QuicConnectionCore",
            "qh3.quic.connection.QuicConnection._create_core",
            "qh3.quic.connection.QuicConnection._create_tls",
            "qh3.quic.tls_bridge.push_quic_transport_parameters",
        ),
        private_names=("_core", "_tls", "_create_core", "_create_tls"),
        why="qh3 fixes a connection's stream limits (100 bidirectional, 103 unidirectional) as positional arguments "
        "21 and 22 of its 28-argument native core and in the transport parameters it writes; a Mark client needs "
        "its own limit, so both are rewritten for that connection only",
        upstream="jawah/qh3: issue asking for max_streams_bidi/uni in QuicConfiguration (aioquic has them as fields)",
    ),
    Patch(
        name="qh3-trust-self-issued-server",
        dependency="qh3",
        kind=Kind.SUBCLASSES,
        where=("swarmgauge.quic.qh3_patches",),
        touches=(
            "qh3.quic.connection.QuicConnection._create_tls",
            "qh3.tls.Context._client_handle_certificate_verify",
            "qh3.tls.load_store_and_sort",
        ),
        private_names=("_client_handle_certificate_verify",),
        why="qh3 drops a self-issued certificate with a TLS extKeyUsage from a CA file, so the demarkus dev "
        "certificate given as --mark-ca failed with 'empty CA store'; OpenSSL (aioquic) trusts it when named",
        upstream="jawah/qh3: issue 'a self-issued server certificate named in cafile is not trusted'",
    ),
    Patch(
        name="qh3-connection-slots",
        dependency="qh3",
        kind=Kind.SUBCLASSES,
        where=("swarmgauge.quic.qh3_patches", "swarmgauge.quic.engine", "swarmgauge.quic.engine_base"),
        touches=(
            "qh3.quic.connection.QuicConnection.__init__",
            "qh3.quic.connection.QuicConnection.next_event",
            "qh3.quic.connection.QuicConnection._events",
            "qh3.quic.connection.QuicConnection._created_local_stream_ids",
        ),
        private_names=(),
        why="qh3's QuicConnection sets 35 instance fields, more than the 30 keys CPython shares among a class's "
        "instances, so every connection built a dictionary of its own (~1.6 KiB per pooled connection), and keeps "
        "its few queued events in a deque (a 624-byte block each) and its one or few local streams in flight in a "
        "set (216 B however few); the engine's subclass declares the fields as slots, queues the events in a list "
        "and keeps the stream ids in a list",
        upstream="jawah/qh3: PR giving QuicConnection __slots__ for its fields and a list for its event queue",
    ),
    Patch(
        name="qh3-post-handshake-tls",
        dependency="qh3",
        kind=Kind.MUTATES,
        where=("swarmgauge.quic.qh3_post_handshake", "swarmgauge.quic.engine"),
        touches=(
            "qh3.quic.connection.QuicConnection._tls",
            "qh3.quic.connection.QuicConnection._applied_transport_parameters",
            "qh3.quic.tls_bridge.QuicTlsBridge._input_offsets",
            "qh3.tls.Context._receive_buffer",
            "qh3.tls.Context.alpn_cb",
            "qh3.tls.Context.update_traffic_key_cb",
            "qh3.quic.connection.QuicConnection._pre_handshake_streams",
            "qh3.quic.connection.QuicConnection._pre_handshake_writes",
        ),
        private_names=(
            "_tls",
            "_is_client",
            "_handshake_complete",
            "_session_ticket_handler",
            "_quic_logger",
            "_input_offsets",
            "_receive_buffer",
            "_applied_transport_parameters",
            "_pre_handshake_streams",
            "_pre_handshake_writes",
        ),
        why="a client keeps qh3's TLS bridge and context (~9 KiB: the key-share private keys, the transcript hash, "
        "the peer's parsed certificate, deques and dicts) for its life although after the handshake they only parse "
        "and drop session tickets; a pooled connection swaps them for a stand-in that does just that (get_peercert() "
        "and QuicConnection.tls are None from then on); the released context's callbacks (the bridge's bound methods) are "
        "cleared so that the pair is freed at once instead of waiting for the cyclic collector; the lists of streams "
        "and writes made before the handshake, emptied by it and read only before it, become the empty tuple",
        upstream="jawah/qh3: issue asking the client to drop its handshake state once the handshake is confirmed",
    ),
    Patch(
        name="qh3-private-reads",
        dependency="qh3",
        kind=Kind.READS_PRIVATE,
        where=("swarmgauge.quic.engine", "swarmgauge.quic.engine_base"),
        touches=("qh3.quic.connection.QuicConnection",),
        private_names=(
            "_core",
            "_quic_logger",
            "_drain_core",
            "_close_event",
            "_handshake_complete",
            "_remote_addr",
            "_next_stream_id_bidi",
            "_record_local_stream",
        ),
        why="the client driver batches the native core's datagrams both ways (receiving without the wrapper's "
        "per-call address check), reads its next timer, opens a request's stream in one call to the core (the "
        "wrapper's send_stream_data checks the buffer and wraps the core call in two more frames), and needs the "
        "peer address: qh3 has no public accessor for any (get_peer_address() is aioquic's only)",
        upstream="jawah/qh3: issue asking for get_peer_address(), get_timer() naming its kind, and a batched "
        "datagrams_to_send without a logger",
    ),
    Patch(
        name="aioquic-private-reads",
        dependency="aioquic",
        kind=Kind.READS_PRIVATE,
        where=("swarmgauge.quic.engine", "swarmgauge.quic.engine_base"),
        touches=("aioquic.quic.connection.QuicConnection", "aioquic.asyncio.server.QuicServer"),
        private_names=(
            "_ack_delay",
            "_spaces",
            "_close_event",
            "_local_max_streams_bidi",
            "_local_max_streams_uni",
            "_remote_max_streams_bidi",
            "_transport",
        ),
        why="ACK delay as quic-go's, stream limits set before the handshake, the close known at once, and the "
        "server's UDP socket (its port, a larger receive buffer): aioquic exposes none of them publicly",
        upstream="aiortc/aioquic: issue asking for QuicConfiguration.max_ack_delay/max_streams and QuicServer's "
        "sockname; the peer address already uses the public get_peer_address()",
    ),
    Patch(
        name="aioquic-two-key-shares",
        dependency="aioquic",
        kind=Kind.SUBCLASSES,
        where=("swarmgauge.quic.engine", "swarmgauge.quic.engine_base"),
        touches=("aioquic.quic.connection.QuicConnection._initialize", "aioquic.tls.Context._supported_groups"),
        private_names=("_supported_groups",),
        why="aioquic's client sends four key shares; qh3's server answers with more Initial data than one datagram "
        "holds and every aioquic handshake against it waited a PTO (~0.7 s)",
        upstream="aiortc/aioquic: PR adding QuicConfiguration.key_share_groups",
    ),
    Patch(
        name="locust-internals",
        dependency="locust",
        kind=Kind.REPLACES,
        where=("swarmgauge.core.locust_compat",),
        touches=(
            "locust.argument_parser.default_args_dict",
            "locust.user.task.TaskSet._sleep",
            "locust.user.task.TaskSet.execute_task",
            "locust.event.EventHook.fire",
            "locust.runners.WorkerRunner._send_stats",
            "locust.stats.StatsEntry.num_reqs_per_sec",
            "locust.stats.RequestStats.history",
        ),
        private_names=("_sleep", "_send_stats"),
        why="a worker rebuilt a whole parser per option per spawn message; open-model timing needs the iteration "
        "seam (TaskSet.execute_task and _sleep swapped only while a step has a rate or a ticket or lag exists, "
        "Locust's own execute_task otherwise); a worker's last figures must go before its quit; per-second counts and chart history grew without "
        "bound over a day-long run (stats trimmed in place)",
        upstream="locust: PRs for a cached default_args_dict, a public flush of worker stats, bounded per-second "
        "counts, and a documented wait seam for TaskSet",
    ),
    Patch(
        name="locust-stop-waiting-user",
        dependency="locust",
        kind=Kind.REPLACES,
        where=("swarmgauge.core.locust_compat", "swarmgauge.users.recording"),
        touches=("locust.user.users.User.stop", "locust.user.users.User._state", "locust.user.users.User._group"),
        private_names=(),
        why="User.stop kills a waiting user, but gevent delivers the kill a loop callback later: a user whose wait "
        "ended in the same loop turn started its next task and the kill landed in that request, recorded as "
        "Unfinished though nothing was in flight at the stop; the user is marked stopping before the kill",
        upstream="locust: PR setting LOCUST_STATE_STOPPING before killing a waiting user in User.stop",
    ),
    Patch(
        name="locust-task-queue-list",
        dependency="locust",
        kind=Kind.REPLACES,
        where=("swarmgauge.core.locust_memory", "swarmgauge.users.recording"),
        touches=("locust.user.task.TaskSet.__init__", "locust.user.task.TaskSet._task_queue"),
        private_names=(),
        why="every TaskSet (one per user: its DefaultTaskSet) queues its scheduled tasks in a deque, whose empty "
        "block is 64 slots: 760 B per user at 1,000 users for a queue that holds at most one task between two; "
        "a list subclass with the deque's popleft/appendleft holds nothing while empty",
        upstream="locust: PR making TaskSet._task_queue a list (or creating it on the first schedule_task)",
    ),
    Patch(
        name="locust-one-run-function",
        dependency="locust",
        kind=Kind.REPLACES,
        where=("swarmgauge.core.locust_memory", "swarmgauge.users.recording"),
        touches=("locust.user.users.User.start", "locust.user.users.User._greenlet", "locust.user.users.User._group"),
        private_names=(),
        why="User.start defines its run_user function inside itself, so every user's greenlet keeps a function "
        "object of its own (152 B per user), held in a dict of the greenlet's own (184 B); a Greenlet subclass whose "
        "_run (gevent's documented override) runs the user is spawned instead (args[0] is still the user)",
        upstream="locust: PR moving User.start's run_user to module level",
    ),
    Patch(
        name="locust-wait-on-timer",
        dependency="locust",
        kind=Kind.REPLACES,
        where=("swarmgauge.core.locust_compat", "swarmgauge.core.sleep_wheel"),
        touches=("locust.user.task.TaskSet._sleep",),
        private_names=("_sleep",),
        why="TaskSet._sleep is gevent.sleep, which waits in hub.wait through a Waiter and a timer of its own: a paced "
        "user asleep between tasks keeps them and a saved C stack one Cython frame deeper, ~1 KiB per user at 1,000 "
        "users; one heap of sleepers per hub, woken by one timer, sleeps as long, and a kill still lands",
        upstream="gevent: issue asking gevent.sleep(seconds > 0) to wait on its timer without a Waiter",
    ),
    Patch(
        name="locust-worker-runner-early",
        dependency="locust",
        kind=Kind.REPLACES,
        where=("swarmgauge.core.locust_compat", "swarmgauge.listeners"),
        touches=("locust.runners.WorkerRunner.connect_to_master", "locust.env.Environment.runner"),
        private_names=(),
        why="a worker joining a running master gets its first spawn, and fires test_start, inside its own "
        "constructor, before Environment.runner is set: listeners took it for a master or a local run, and it "
        "opened a run folder of its own in --run-dir and moved 'latest' to it",
        upstream="locust: issue asking that Environment.runner be set before WorkerRunner connects (or that the "
        "first spawn be handled after the constructor returns)",
    ),
    Patch(
        name="locust-worker-channel-secrets",
        dependency="locust",
        kind=Kind.REPLACES,
        where=("swarmgauge.core.worker_channel",),
        touches=("locust.rpc.zmqrpc.BaseSocket.send_to_client",),
        private_names=(),
        why="the master sends every worker its whole parsed options with each spawn (vars(parsed_options)), secret "
        "options included, in clear: every message it sends now loses the secret options (their names stay, so a "
        "worker can say which it lacks) and any registered secret value",
        upstream="locust: issue asking that options declared is_secret=True not be sent in the spawn message",
    ),
    Patch(
        name="locust-worker-channel-curve",
        dependency="locust",
        kind=Kind.REPLACES,
        where=("swarmgauge.core.worker_channel",),
        touches=(
            "locust.rpc.zmqrpc.BaseSocket.__init__",
            "locust.env.Environment.create_master_runner",
            "locust.env.Environment.create_worker_runner",
            "locust.env.Environment.create_local_runner",
        ),
        private_names=(),
        why="the master's port accepts any peer: with --cluster-key-file its socket is a ZeroMQ CURVE server and "
        "every worker's a CURVE client (keys derived from the shared key, a ZAP check of the worker's key), set "
        "between the socket's creation and its bind or connect; the runners' creation is where the key is read "
        "and the master's bind host told, before the socket exists (and where the --csv folder is made private, "
        "before Locust makes it)",
        upstream="locust: issue asking for authenticated, encrypted master-worker sockets (a ZeroMQ CURVE option)",
    ),
    Patch(
        name="locust-stop-tick-warning",
        dependency="locust",
        kind=Kind.FILTERS_LOG,
        where=("swarmgauge.shapes.base",),
        touches=("locust.runners (logger) 'spawn rate is very high'",),
        private_names=(),
        why="a plan's end asks for a spawn rate above 100 only to stop every user at once; Locust's warning about "
        "ramping fast would be shown at the end of every planned run",
        upstream="locust: issue asking that a shape's stop tick (user count 0) not warn about the spawn rate",
    ),
    Patch(
        name="hdrh-acyclic-encoder",
        dependency="hdrhistogram",
        kind=Kind.MUTATES,
        where=("swarmgauge.listeners.hdr_acyclic",),
        touches=("hdrh.histogram.HdrHistogram.encoder.histogram",),
        private_names=(),
        why="the encoder points back at its histogram, so every ~190 KB histogram is a reference cycle freed only "
        "by a full collection; the per-step recorder makes several a second and RSS climbed",
        upstream="HdrHistogram/HdrHistogram_py: PR making the encoder's back-reference weak",
    ),
    Patch(
        name="mcp-live-sessions",
        dependency="mcp",
        kind=Kind.READS_PRIVATE,
        where=("swarmgauge.targets.mcp_gateway.server",),
        touches=("mcp.server.streamable_http_manager.StreamableHTTPSessionManager._server_instances",),
        private_names=("_server_instances",),
        why="the gateway's /metrics reports its live sessions; the SDK's session manager keeps them in a private "
        "table and has no count",
        upstream="modelcontextprotocol/python-sdk: issue asking for a public session count on the session manager",
    ),
    Patch(
        name="uvicorn-one-write",
        dependency="uvicorn",
        kind=Kind.SUBCLASSES,
        where=("swarmgauge.targets.mcp_gateway.one_write",),
        touches=("uvicorn.protocols.http.h11_impl.H11Protocol.connection_made",),
        private_names=(),
        why="uvicorn's h11 protocol writes a response's status and headers and then its body as two sends, two TCP "
        "segments on a TCP_NODELAY socket, the MCP gateway's largest single cost a tool call; the subclass hands it "
        "a transport that joins the writes of one loop turn (same bytes, SSE events still go out as they come)",
        upstream="encode/uvicorn: issue asking the h11 protocol to send a complete small response in one write",
    ),
    Patch(
        name="argparse-append-action",
        dependency="python",
        kind=Kind.READS_PRIVATE,
        where=(
            "swarmgauge.listeners.repeat_command",
            "swarmgauge.listeners.webui_form",
            "swarmgauge.core.locust_compat",
        ),
        touches=("argparse._AppendAction", "argparse.ArgumentParser._option_string_actions"),
        private_names=("_AppendAction", "_option_string_actions"),
        why="the repeat command and the web form write an append option once per value (argparse has no public "
        "way to ask an action whether it appends); Locust's own options get our help text through the parser's "
        "table of options (it has no public lookup of an action by flag)",
        upstream="none: CPython keeps action classes private; kept as long as argparse does",
    ),
    Patch(
        name="argparse-parser-actions",
        dependency="python",
        kind=Kind.READS_PRIVATE,
        where=("swarmgauge.listeners.repeat_command",),
        touches=("argparse.ArgumentParser._actions",),
        private_names=("_actions",),
        why="a web UI run's repeat command names every option its command line set: configargparse records the "
        "command line as argv alone, so each option is asked for on it (configargparse's own "
        "already_on_command_line), and argparse has no public list of a parser's options",
        upstream="none: CPython keeps a parser's actions private; kept as long as argparse does",
    ),
)

#: Private-looking names that the standard library documents as public.
DOCUMENTED_PRIVATE_NAMES = frozenset({"_exit"})


def allowed_private_names() -> dict[str, set[str]]:
    """Module (dotted) -> the dependencies' private names its patches may use there."""
    allowed: dict[str, set[str]] = {}
    for patch in PATCHES:
        for module in patch.where:
            allowed.setdefault(module, set()).update(patch.private_names)
    return allowed
