"""``swarmgauge mark VERB URL``: a curl for ``mark://``.

Writes take the body on stdin. ``swarmgauge mark raw URL`` sends stdin as the exact request bytes on one stream and
writes the exact response bytes to stdout. Exit status: 0 for ok / created / not-modified, 1 for any other status,
2 for transport or usage errors (one line on stderr).
"""

from __future__ import annotations

import argparse
import logging
import sys
from urllib.parse import urlsplit

from swarmgauge.errors import SwarmgaugeError
from swarmgauge.protocols import mark as codec
from swarmgauge.users.mark_client import MarkClient

WRITE_VERBS = {"PUBLISH", "APPEND"}
VERB_CHOICES = [v.lower() for v in codec.VERBS] + ["raw"]


class _UsageFailure(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, as for every usage error
        raise _UsageFailure(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="swarmgauge mark", description=__doc__.splitlines()[0])
    parser.add_argument("verb", type=str.lower, choices=VERB_CHOICES)
    parser.add_argument("url", help="mark://host[:port]/path")
    parser.add_argument("--insecure", action="store_true", help="skip TLS certificate verification")
    parser.add_argument("--ca", dest="ca_file", help="CA file to verify the server with")
    parser.add_argument("--server-name", help="TLS server name (SNI) override")
    parser.add_argument("--token", help="capability token, sent as auth (never printed)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
    parser.add_argument(
        "-m",
        "--meta",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="request metadata, repeatable (e.g. -m if-none-match=ETAG, -m query=alpha)",
    )
    return parser


def split_url(url: str) -> tuple[str, str]:
    """``mark://h:p/path`` -> (``mark://h:p``, ``/path``)."""
    parts = urlsplit(url)
    if parts.scheme != "mark" or not parts.hostname:
        raise _UsageFailure(f"not a mark:// URL: {url!r}")
    path = parts.path or "/"
    return f"mark://{parts.netloc}", path


def parse_meta(pairs: list[str]) -> dict[str, str]:
    metadata: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise _UsageFailure(f"metadata must be KEY=VALUE, got {pair!r}")
        metadata[key.strip().lower()] = value
    return metadata


def format_response(response: codec.Response) -> bytes:
    lines = [f"status: {response.status}"] + [f"{k}: {v}" for k, v in sorted(response.metadata.items())]
    head = ("\n".join(lines) + "\n").encode()
    return head + (b"\n" + response.body if response.body else b"")


def main(argv: list[str]) -> int:
    logging.getLogger("quic").setLevel(logging.CRITICAL)  # aioquic's own log would add a second stderr line

    try:
        args = build_parser().parse_args(argv)
        base, path = split_url(args.url)
        metadata = parse_meta(args.meta)
        verb = args.verb.upper()
        body = sys.stdin.buffer.read() if verb in WRITE_VERBS or verb == "RAW" else b""
        if args.token:
            metadata["auth"] = args.token
        request = body if verb == "RAW" else codec.encode_request(verb, path, metadata, body)
    except _UsageFailure as exc:
        print(f"swarmgauge mark: {exc}", file=sys.stderr)
        return 2
    client = MarkClient(
        base, insecure=args.insecure, ca_file=args.ca_file, server_name=args.server_name, timeout=args.timeout
    )
    try:
        raw = client.raw(request)
    except SwarmgaugeError as exc:
        print(f"swarmgauge mark: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        client.close()
    if verb == "RAW":
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
        try:
            status = codec.parse_response(raw).status
        except codec.MarkParseError:
            return 1
        return 0 if status in codec.SUCCESS_STATUSES else 1
    try:
        response = codec.parse_response(raw)
    except codec.MarkParseError as exc:
        print(f"swarmgauge mark: MarkMalformedResponse: {exc.reason}", file=sys.stderr)
        return 2
    sys.stdout.buffer.write(format_response(response))
    sys.stdout.buffer.flush()
    return 0 if response.status in codec.SUCCESS_STATUSES else 1
