"""``swarmgauge target mark``: run the reference server until SIGINT/SIGTERM.

Prints exactly one line on stdout, ``ready mark://HOST:PORT``, once it accepts connections; everything else goes
to stderr, so scripts and :mod:`targets.mark.launch` can wait for that line. Raw tokens are hashed at start-up and
never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

from swarmgauge.core.durations import DurationError, parse_duration
from swarmgauge.errors import UsageError
from swarmgauge.quic.engine import DEFAULT_SERVER_ENGINE, ENGINES
from swarmgauge.targets.mark import seed
from swarmgauge.targets.mark.auth import TokenStore, parse_tokens_toml, publish_token
from swarmgauge.targets.mark.backend import BackendKnobs, SimulatedBackend
from swarmgauge.targets.mark.commits import ORDERS
from swarmgauge.targets.mark.handler import Handler
from swarmgauge.targets.mark.server import DEFAULT_PORT, MarkService, ServerSettings, start_server
from swarmgauge.targets.mark.store import Store, StoreError
from swarmgauge.targets.mark.tls import dev_certificate

log = logging.getLogger("swarmgauge.target.mark")
PUBLISH_TOKEN_ENV = "SWARMGAUGE_MARK_PUBLISH_TOKEN"


def _duration(text: str) -> float:
    """``1.5s``, ``250ms``, ``1h30m`` or a bare number of seconds (the one duration parser, as an argparse type)."""
    try:
        return parse_duration(text.strip().lower(), "duration")
    except DurationError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 1.5s or 250ms)") from None


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _non_negative(kind):
    def parse(text: str):
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"must not be negative: {text}")
        return value

    return parse


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, not {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="swarmgauge target mark", description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback by default)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="UDP port; 0 picks a free one")
    p.add_argument("--clock", type=_moment, help="pin the server clock (e.g. 2026-01-01T00:00:00Z)")
    p.add_argument(
        "--publish-token",
        action="append",
        default=[],
        metavar="RAW",
        help=f"a raw token granted publish on /** (repeatable; also ${PUBLISH_TOKEN_ENV})",
    )
    p.add_argument("--tokens", type=Path, help="a tokens.toml of sha256 hashes, globs and operations")
    p.add_argument("--store", type=Path, help="keep documents in this directory (default: in memory)")
    p.add_argument("--seed", type=Path, help="publish every .md file of this directory at start-up")
    p.add_argument(
        "--seed-corpus",
        type=_non_negative(int),
        default=0,
        metavar="N",
        help="publish N generated documents under /corpus (deterministic)",
    )
    p.add_argument("--read-only", action="store_true", help="refuse every write with not-permitted")
    p.add_argument(
        "--rate-limit",
        type=_non_negative(float),
        default=0.0,
        metavar="N",
        help="per-IP requests/s (0 = off; the real default is 50)",
    )
    p.add_argument("--rate-burst", type=_non_negative(float), default=100.0, metavar="N")
    p.add_argument("--max-streams", type=int, default=10, help="concurrent streams per connection")
    p.add_argument(
        "--quic-engine",
        choices=ENGINES,
        default=DEFAULT_SERVER_ENGINE,
        help=f"QUIC library to serve with (default {DEFAULT_SERVER_ENGINE}, the cheaper per request)",
    )
    p.add_argument("--idle-timeout", type=_duration, default=30.0)
    p.add_argument("--request-timeout", type=_duration, default=10.0, help="per-request deadline")
    p.add_argument(
        "--read-delay-ms", type=_non_negative(float), default=0.0, help="simulated backend round trip per read"
    )
    p.add_argument("--reads-stat-head", action="store_true", help="two round trips per read: stat, then get")
    p.add_argument(
        "--backend-rps",
        type=_non_negative(float),
        default=0.0,
        help="simulated backend capacity in reads/s (0 = unlimited)",
    )
    p.add_argument(
        "--backend-concurrency",
        type=_non_negative(int),
        default=0,
        metavar="N",
        help="simulated backend serves at most N reads at once, each through its round trips (0 = unlimited)",
    )
    p.add_argument(
        "--backend-gap-shape",
        type=_non_negative(float),
        default=BackendKnobs.gap_shape,
        help="gamma shape of the gaps between reads the capacity serves (0 = perfectly even)",
    )
    p.add_argument(
        "--read-delay-jitter",
        type=_non_negative(float),
        default=BackendKnobs.delay_jitter,
        help="lognormal sigma of each simulated round trip (0 = always --read-delay-ms)",
    )
    p.add_argument(
        "--backend-stall-ms",
        type=_non_negative(float),
        default=0.0,
        help="the simulated backend stands still this long, every read in it waiting, about once per "
        "--backend-stall-reads reads (0 = never)",
    )
    p.add_argument(
        "--backend-stall-reads",
        type=int,
        default=BackendKnobs.stall_reads,
        metavar="N",
        help="mean reads between two backend stalls (spread evenly 10 %% either side of it, seeded)",
    )
    p.add_argument(
        "--commit-interval", type=_duration, default=0.0, help="least time between two write commits' starts"
    )
    p.add_argument(
        "--commit-cost", type=_duration, default=0.0, help="time one write commit takes in the simulated bucket"
    )
    p.add_argument(
        "--commit-order",
        choices=ORDERS,
        default="random",
        help="which waiting writer gets the next commit slot: the first awake (random, as the page's losses "
        "show) or the longest waiting (fifo)",
    )
    p.add_argument(
        "--initial-loss",
        type=_share,
        default=0.0,
        metavar="SHARE",
        help="share of new connections whose client's first Initial datagram the path loses, seeded (0 = none): "
        "the client's own retransmit timer then decides the wait, as on the kind page's UDP path",
    )
    p.add_argument("--cert-out", type=Path, help="write the dev certificate (PEM) here, for clients' --mark-ca")
    p.add_argument(
        "--max-seconds",
        type=_non_negative(float),
        default=0.0,
        help="stop by itself after this long (0 = run until signalled)",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def build_service(args: argparse.Namespace) -> MarkService:
    pinned = args.clock

    def clock() -> datetime:
        return pinned if pinned is not None else datetime.now(UTC).replace(microsecond=0)

    raws = [*args.publish_token, *filter(None, [os.environ.get(PUBLISH_TOKEN_ENV)])]
    tokens = [publish_token(raw, f"cli-{n}") for n, raw in enumerate(raws)]
    if args.tokens is not None:
        try:
            tokens += parse_tokens_toml(args.tokens.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"--tokens {args.tokens}: {exc.strerror}") from None
    try:
        store = Store(args.store)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if args.seed is not None:
        log.info(
            "seeded %d documents from %s", seed.seed_store(store, seed.from_directory(args.seed), clock()), args.seed
        )
    if args.seed_corpus:
        log.info("seeded %d corpus documents", seed.seed_store(store, seed.corpus(args.seed_corpus), clock()))
    handler = Handler(store, TokenStore(tokens, clock) if tokens else None, clock, read_only=args.read_only)
    settings = ServerSettings(
        max_streams=args.max_streams,
        idle_timeout=args.idle_timeout,
        request_timeout=args.request_timeout,
        rate_limit=args.rate_limit,
        rate_burst=args.rate_burst,
        quic_engine=args.quic_engine,
        initial_loss=args.initial_loss,
    )
    knobs = BackendKnobs(
        read_delay=args.read_delay_ms / 1000,
        stat_head=args.reads_stat_head,
        backend_rps=args.backend_rps,
        commit_interval=args.commit_interval,
        commit_cost=args.commit_cost,
        commit_order=args.commit_order,
        gap_shape=args.backend_gap_shape,
        delay_jitter=args.read_delay_jitter,
        backend_concurrency=args.backend_concurrency,
        stall_length=args.backend_stall_ms / 1000,
        stall_reads=args.backend_stall_reads,
    )
    if knobs.stall_length and knobs.stall_reads < 2:
        raise UsageError("--backend-stall-reads must be at least 2")
    return MarkService(handler, settings, SimulatedBackend(knobs))


def format_url(host: str, port: int) -> str:
    return f"mark://[{host}]:{port}" if ":" in host else f"mark://{host}:{port}"


async def serve_until_stopped(args: argparse.Namespace, service: MarkService) -> None:
    cert = dev_certificate()
    if args.cert_out is not None:
        cert.write_pem(args.cert_out)
    server, port = await start_server(service, cert, args.host, args.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"ready {format_url(args.host, port)}", flush=True)
    try:
        if args.max_seconds:
            await asyncio.wait_for(stop.wait(), timeout=args.max_seconds)
        else:
            await stop.wait()
    except TimeoutError:
        log.info("stopping after --max-seconds %s", args.max_seconds)
    finally:
        server.close()
        service.close()
        counters = service.counters
        log.info(
            "served %d requests (%d rate-limited, %d deadline expiries)",
            counters.requests,
            counters.rate_limited,
            counters.deadline_expired,
        )
        if service.initial_loss is not None:
            loss = service.initial_loss
            log.info("the path lost the first flight of %d of %d new connections", loss.dropped, loss.connections)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        service = build_service(args)
        asyncio.run(serve_until_stopped(args, service))
    except UsageError as exc:
        print(f"swarmgauge target mark: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"swarmgauge target mark: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
