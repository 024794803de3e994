"""A throwaway PostgreSQL cluster: ``initdb`` + ``pg_ctl`` on a free loopback port in a temp dir, removed on stop.

For tests, the demo and local kneo-serv runs on PostgreSQL. ``initdb`` refuses root, so as root the cluster runs as
the ``postgres`` user with the data dir chowned to it. Password auth (scram) with a generated password; the DSN's
password is shown as ``***`` in anything printed or logged (``redact_dsn``). Stdlib only.

``initdb`` (and ``createdb``) run once per binaries, user and database: their data directory is kept as a template
(:func:`template_dir`, in the temp dir) and each cluster starts from a copy of it, its own password set in single-user
mode before it listens. initdb took 1.5 to 5 s of each kneo workload's start-up (7 of them in a demo) on 2 cores; a
copy and the password take a few tenths.
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
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
from collections.abc import Callable
from pathlib import Path
from typing import cast

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.files import write_atomic
from swarmgauge.targets.launch import die_with_parent

log = logging.getLogger(__name__)

_DSN_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]+:)([^@\s]*)(@)")
#: bump when what a template holds changes: the templates of the format before are then not used
TEMPLATE_FORMAT = 1
TEMPLATE_READY = "swarmgauge-template-ready"


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


def template_dir(bindir: Path, user: str, database: str) -> Path:
    """Where the initdb'd data directory for these binaries, user and database is kept (the system temp dir: the
    ``postgres`` user that runs the clusters as root can read it, and a cleared temp dir only means one more initdb)."""
    key = hashlib.sha256(f"{bindir}|{user}|{database}|{TEMPLATE_FORMAT}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"swarmgauge-pg-template-{key}"


def _held_until_ready(preexec: Callable[[], None]) -> Callable[[], None]:
    """``preexec`` with SIGTERM blocked first: the watchdog unblocks it once its handler is in, so an owner killed
    while the watchdog still imports ends the cluster instead of killing the watchdog before it can."""

    def held() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        preexec()

    return held


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
        #: ends the cluster if this process dies without ``stop`` (``pg_ctl`` detaches the postmaster)
        self._watchdog: subprocess.Popen | None = None

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

    def _pg(
        self, tool: str, *args: str, timeout: float, stdin: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess:
        kwargs: dict = {}
        if self._run_as is not None:
            kwargs.update(user=self._run_as.pw_uid, group=self._run_as.pw_gid, extra_groups=[])
        result = subprocess.run(
            [str(self.bindir / tool), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(cwd or self.root),
            input=stdin,
            **kwargs,
        )
        if result.returncode != 0:
            tail = redact_dsn((result.stderr or result.stdout).strip()[-600:])
            raise PostgresError(f"{tool} failed ({result.returncode}): {tail}")
        return result

    def _own(self, path: Path) -> None:
        """Hand ``path`` to the user the cluster runs as (root only: initdb and the server refuse root)."""
        if self._run_as is not None:
            os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)

    def _initdb(self, where: Path) -> None:
        """A data directory at ``where`` with the user (a throwaway password: each cluster sets its own) and the
        database."""
        pwfile = where.parent / "pwfile"
        pwfile.write_text(secrets.token_urlsafe(18) + "\n")
        os.chmod(pwfile, 0o600)
        self._own(pwfile)
        self._pg(
            "initdb",
            "-D",
            str(where),
            "-U",
            self.user,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--no-instructions",
            "--no-sync",  # the bootstrap files need no fsync: a cluster that crashes is thrown away, not recovered
            timeout=120,
            cwd=where.parent,
        )
        pwfile.unlink()
        self._single_user(where, f'CREATE DATABASE "{self.database}";\n')

    def _single_user(self, data: Path, sql: str) -> None:
        """Statements run in single-user mode: no server listening, no password on any command line."""
        self._pg(
            "postgres",
            "--single",
            "-D",
            str(data),
            "-c",
            "fsync=off",
            "postgres",
            timeout=60,
            stdin=sql,
            cwd=data.parent,
        )

    def _template(self) -> Path:
        """The template data directory, made once (under a lock: clusters may start side by side)."""
        template = template_dir(self.bindir, self.user, self.database)
        lock_path = template.parent / f"{template.name}.lock"
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (template / TEMPLATE_READY).is_file():
                return template
            shutil.rmtree(template, ignore_errors=True)
            staging = Path(tempfile.mkdtemp(prefix=f"{template.name}-staging-"))
            try:
                self._own(staging)
                self._initdb(staging / "data")
                (staging / "data").rename(template)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            (template / TEMPLATE_READY).write_text(f"{self.bindir} {self.user} {self.database}\n")
            return template

    def _from_template(self) -> None:
        """This cluster's data directory: a copy of the template, owned by the server's user, with its password."""
        shutil.copytree(self._template(), self.data_dir, symlinks=True, ignore=shutil.ignore_patterns(TEMPLATE_READY))
        if self._run_as is not None:
            for folder, dirs, files in os.walk(self.data_dir):
                for name in (folder, *(os.path.join(folder, entry) for entry in dirs + files)):
                    os.chown(name, self._run_as.pw_uid, self._run_as.pw_gid, follow_symlinks=False)
        os.chmod(self.data_dir, 0o700)
        self._single_user(self.data_dir, f"ALTER ROLE \"{self.user}\" PASSWORD '{self.password}';\n")

    def start(self) -> PostgresCluster:
        self.root = Path(tempfile.mkdtemp(prefix="swarmgauge-pg-"))
        try:
            if os.geteuid() == 0:
                self._run_as = pwd.getpwnam("postgres")
                self._own(self.root)
            self._from_template()
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
            self._watchdog = subprocess.Popen(
                [sys.executable, "-m", "swarmgauge.targets.pg_watchdog", str(self.root), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                preexec_fn=_held_until_ready(die_with_parent(os.getpid())),
                start_new_session=True,
            )
        except BaseException:
            self.stop()
            raise
        log.info("postgres ready at %s", self.redacted_dsn)
        return self

    def stop(self) -> None:
        if self._watchdog is not None:  # ours to stop now: killed, it does nothing
            self._watchdog.kill()
            self._watchdog.wait(10)
            self._watchdog = None
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
