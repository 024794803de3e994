"""A throwaway PostgreSQL cluster: ``initdb`` + ``pg_ctl`` on a free loopback port in a temp dir, removed on stop.

For tests, the demo and local kneo-serv runs on PostgreSQL. ``initdb`` refuses root, so as root the cluster runs as
the ``postgres`` user with the data dir chowned to it. Password auth (scram) with a generated password; the DSN's
password is shown as ``***`` in anything printed or logged (``redact_dsn``). Stdlib only.
"""

from __future__ import annotations

import argparse
import glob
import logging
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import cast

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.files import write_atomic

log = logging.getLogger(__name__)

_DSN_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]+:)([^@\s]*)(@)")


class PostgresError(SwarmgaugeError):
    """The throwaway cluster could not be made or started."""


def redact_dsn(text: str) -> str:
    """``postgresql://user:secret@host`` → ``postgresql://user:***@host`` anywhere in ``text``."""
    return _DSN_PASSWORD.sub(r"\1***\3", text)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` right now (bind to 0 and release)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def find_bindir(explicit: str | None = None) -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``: option, env, ``pg_config --bindir``, Debian's lib dirs."""
    named = explicit or os.environ.get("SWARMGAUGE_PG_BINDIR")
    if named:
        if (Path(named) / "initdb").exists() and (Path(named) / "pg_ctl").exists():
            return Path(named)
        raise PostgresError(f"no PostgreSQL binaries: {named} holds no initdb and pg_ctl")
    candidates: list[str] = []
    if shutil.which("pg_config"):
        try:
            out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
            candidates.append(out.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for candidate in candidates:
        path = Path(candidate)
        if (path / "initdb").exists() and (path / "pg_ctl").exists():
            return path
    raise PostgresError(
        "no PostgreSQL binaries: looked for initdb and pg_ctl in pg_config --bindir, /usr/lib/postgresql/*/bin and PATH"
    )


class PostgresCluster:
    """One throwaway cluster; use as a context manager or call ``start()`` / ``stop()``."""

    def __init__(
        self,
        *,
        port: int | None = None,
        user: str = "swarmgauge",
        database: str = "swarmgauge",
        bindir: str | None = None,
        fsync: bool = True,
        max_connections: int = 200,
        start_timeout: float = 60.0,
    ) -> None:
        self.bindir = find_bindir(bindir)
        self.port = port or free_port()
        self.user = user
        self.database = database
        self.fsync = fsync
        self.max_connections = max_connections
        self.start_timeout = start_timeout
        self.password = secrets.token_urlsafe(18)
        self.root: Path | None = None
        self._run_as: pwd.struct_passwd | None = None

    @property
    def dsn(self) -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    @property
    def redacted_dsn(self) -> str:
        return redact_dsn(self.dsn)

    @property
    def data_dir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    def sample_spec(self) -> str:
        """The resource sampler's source for this cluster: its postmaster by data directory, backends summed in."""
        return f"psutil:match=-D {re.escape(str(self.data_dir))}( |$)"

    def _pg(self, tool: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
        kwargs: dict = {}
        if self._run_as is not None:
            kwargs.update(user=self._run_as.pw_uid, group=self._run_as.pw_gid, extra_groups=[])
        result = subprocess.run(
            [str(self.bindir / tool), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(self.root),
            **kwargs,
        )
        if result.returncode != 0:
            tail = redact_dsn((result.stderr or result.stdout).strip()[-600:])
            raise PostgresError(f"{tool} failed ({result.returncode}): {tail}")
        return result

    def start(self) -> PostgresCluster:
        self.root = Path(tempfile.mkdtemp(prefix="swarmgauge-pg-"))
        try:
            if os.geteuid() == 0:
                self._run_as = pwd.getpwnam("postgres")
                os.chown(self.root, self._run_as.pw_uid, self._run_as.pw_gid)
            pwfile = self.root / "pwfile"
            pwfile.write_text(self.password + "\n")
            os.chmod(pwfile, 0o600)
            if self._run_as is not None:
                os.chown(pwfile, self._run_as.pw_uid, self._run_as.pw_gid)
            self._pg(
                "initdb",
                "-D",
                str(self.data_dir),
                "-U",
                self.user,
                f"--pwfile={pwfile}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--no-instructions",
                "--no-sync",  # the bootstrap files need no fsync: a cluster that crashes is thrown away, not recovered
                timeout=120,
            )
            pwfile.unlink()
            options = (
                f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                f"-c max_connections={self.max_connections} -c fsync={'on' if self.fsync else 'off'}"
            )
            self._pg(
                "pg_ctl",
                "-D",
                str(self.data_dir),
                "-l",
                str(self.root / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                str(int(self.start_timeout)),
                "start",
                timeout=self.start_timeout + 10,
            )
            self._create_database()
        except BaseException:
            self.stop()
            raise
        log.info("postgres ready at %s", self.redacted_dsn)
        return self

    def _create_database(self) -> None:
        env_password = {"PGPASSWORD": self.password}
        cmd = [str(self.bindir.parent / "bin" / "createdb")]
        if not Path(cmd[0]).exists():
            cmd = [shutil.which("createdb") or "createdb"]
        result = subprocess.run(
            [*cmd, "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, self.database],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env_password},
        )
        if result.returncode != 0:
            raise PostgresError(f"createdb failed: {redact_dsn(result.stderr.strip()[-300:])}")

    def stop(self) -> None:
        if self.root is None:
            return
        if (self.data_dir / "postmaster.pid").exists():
            try:
                # immediate: no shutdown checkpoint writing and syncing buffers of a data dir removed next
                self._pg("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "-t", "30", "stop", timeout=45)
            except (PostgresError, subprocess.SubprocessError) as exc:
                log.warning("pg_ctl stop: %s", exc)
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    """``swarmgauge target postgres``: start a cluster, print its redacted DSN and a 0600 file with the real one."""
    parser = argparse.ArgumentParser(prog="swarmgauge target postgres", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--bindir", default=None, help="directory with initdb/pg_ctl")
    parser.add_argument("--dsn-file", default=None, help="write the full DSN here (mode 0600)")
    parser.add_argument("--no-fsync", action="store_true", help="fsync=off (faster, for throwaway tests)")
    parser.add_argument("--max-seconds", type=float, default=0.0, help="stop after this long (0: until signalled)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        cluster = PostgresCluster(port=args.port or None, bindir=args.bindir, fsync=not args.no_fsync).start()
    except (PostgresError, UsageError) as exc:
        print(f"swarmgauge target postgres: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        dsn_file = Path(args.dsn_file) if args.dsn_file else cast(Path, cluster.root) / "dsn"  # set by start()
        write_atomic(dsn_file, cluster.dsn + "\n")  # mode 0600: the DSN holds the password
        print(f"ready {cluster.redacted_dsn}", flush=True)
        print(f"dsn-file {dsn_file}", flush=True)
        stop.wait(args.max_seconds or None)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
