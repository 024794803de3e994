"""``swarmgauge target sim-http`` on a namespace's own address: ``python -m tests.deploy.namespace_target --host ADDR``.

The real target (its app, its record of every request, its options) served by ``sim_http.start_server``, which
skips the loopback rule: the multi-host tests bind it to the address of a network namespace they made, where the
workers in the other namespaces reach it over the veth links. Prints ``ready http://ADDR:PORT`` like the target.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from gevent import monkey

    monkey.patch_all()
    import gevent

    from swarmgauge.targets.sim_http import SimHttpApp, build_parser, start_server

    args = build_parser().parse_args(argv)
    app = SimHttpApp(args.delay, args.seed, args.stall_at, args.stall_for, args.capacity)
    server = start_server(app, args.host, args.port)
    print(f"ready http://{args.host}:{server.server_port}", flush=True)
    try:
        gevent.sleep(args.max_seconds)
    finally:
        server.stop(timeout=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
