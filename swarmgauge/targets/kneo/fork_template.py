"""A kneo-serv fork parent shared by many runs: kneo-serv imported once for a whole page of workloads.

Each run's fork parent (``fork_parent.py``) imports kneo-serv for itself: about 1 s of CPU at every kneo workload's
start-up, ten times on the demo's kneo page. :class:`ForkTemplate` starts ``fork_parent_script.py --listen PATH``
once; it imports kneo-serv and forks, for each run that connects, a fork parent of that run's own (a clone, already
imported). A run finds it through :data:`TEMPLATE_VARIABLE` in its environment (``service.launch_fork_parent``);
where none listens there it launches its own fork parent, as without one.

A clone ends when its run closes the connection (or dies), its kneo-serv processes with it; every clone ends with the
template, and the template with the process that started it. The socket sits in a folder of its own, mode 0700 (``mkdtemp``).
Stdlib only.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from swarmgauge.targets.kneo.fork_parent import SCRIPT, end_its_input
from swarmgauge.targets.launch import die_with_parent

#: the environment variable that names a template's socket to the runs started beside it
TEMPLATE_VARIABLE = "SWARMGAUGE_KNEO_FORK_TEMPLATE"
SOCKET_NAME = "fork-parent.sock"
#: connections the socket holds while the template imports (a demo starts one run at a time)
BACKLOG = 16


class ForkTemplate:
    """The shared fork parent's process and socket: :meth:`launch` starts it (its imports run from then on),
    :meth:`close` ends it and every clone still running."""

    def __init__(self, process: subprocess.Popen, folder: Path) -> None:
        self._process = process
        self.folder = folder
        self.path = folder / SOCKET_NAME

    @classmethod
    def launch(cls, venv_python: Path, env: dict[str, str]) -> ForkTemplate:
        """Start the template; its socket listens before this returns (a run connecting early waits for the imports
        in the socket's backlog, not for a file that is not there yet)."""
        folder = Path(tempfile.mkdtemp(prefix="swarmgauge-kneo-template-"))
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(folder / SOCKET_NAME))
            listener.listen(BACKLOG)
            process = subprocess.Popen(
                [str(venv_python), "-u", str(SCRIPT), "--listen-fd", str(listener.fileno())],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,  # its ready line is for no one: each clone says its own
                stderr=subprocess.DEVNULL,  # a template that fails leaves each run to launch its own, which says why
                env=env,
                pass_fds=(listener.fileno(),),
                preexec_fn=die_with_parent(os.getpid()),
                start_new_session=True,
            )
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            listener.close()  # the template's copy listens on
        return cls(process, folder)

    @property
    def pid(self) -> int:
        return self._process.pid

    def environment(self) -> dict[str, str]:
        """What a run's environment needs to take its fork parent from this template."""
        return {TEMPLATE_VARIABLE: str(self.path)}

    def close(self, timeout: float = 10.0) -> None:
        end_its_input(self._process, timeout)  # it exits, its clones get their death signal
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> ForkTemplate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
