"""The chaos benchmark's processes: a throwaway PostgreSQL cluster and agentshape commands.

The cluster is Debian's ``postgresql`` binaries (``initdb`` and ``pg_ctl`` in a temporary
directory, run as the ``postgres`` user when the benchmark runs as root), the approach of
``tests/agent_coordinator/harness.py``. Each agentshape command (``serve``, ``runner``) runs in
its own session with its output in a log file, so a kill or a full pipe never blocks the
benchmark and the logs can be read after a failure.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path


def free_port() -> int:
    """Return a loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def postgres_bin() -> Path | None:
    """Return the newest installed PostgreSQL's ``bin`` directory, or ``None``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class Postgres:
    """A throwaway PostgreSQL cluster on a free loopback port, in ``root``.

    Args:
        root: An empty directory of its own (removed by :meth:`remove`).

    Raises:
        RuntimeError: PostgreSQL is not installed, or ``initdb`` or the first start failed.
    """

    def __init__(self, root: Path) -> None:
        bindir = postgres_bin()
        if bindir is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.bindir = bindir
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self._user: list[str] = []
        if os.geteuid() == 0:
            pwd.getpwnam("postgres")  # KeyError when the package did not create the user
            shutil.chown(root, "postgres", "postgres")
            root.chmod(0o700)
            self._user = ["runuser", "-u", "postgres", "--"]
        try:
            self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
            self.start()
            self._run(
                "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "chaos"
            )
        except BaseException:
            self.remove()
            raise

    @property
    def url(self) -> str:
        """The benchmark's database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/chaos"

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self._user, str(self.bindir / tool), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=self.root,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=300",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: roll back and disconnect every client) and wait."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def remove(self) -> None:
        """Stop the server at once if it runs, and remove its directory."""
        try:
            self.stop("immediate")
        except (RuntimeError, subprocess.SubprocessError, OSError):
            pass  # not running
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class Command:
    """``python -m agentshape ARGS`` in its own process session, its output in ``log``.

    Args:
        args: The command line after ``agentshape``.
        log: The file that receives standard output and error.
        cwd: The working directory.
        env: Added to the environment.
    """

    def __init__(self, args: list[str], *, log: Path, cwd: Path, env: Mapping[str, str]) -> None:
        self.log = log
        with log.open("wb") as out:
            # A session of its own: a Ctrl-C at the terminal reaches the benchmark only, which
            # then stops every process it started itself.
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "agentshape", *args],
                cwd=cwd,
                env={**os.environ, **env},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self) -> str:
        """Return what the process has written so far."""
        return self.log.read_text("utf-8", errors="replace")

    def wait_for(self, marker: str, timeout_s: float) -> str:
        """Return the first line of output containing ``marker``.

        Raises:
            RuntimeError: The process ended first, or ``timeout_s`` passed.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in self.output().splitlines():
                if marker in line:
                    return line
            if self.popen.poll() is not None:
                raise RuntimeError(
                    f"{self.log.name} ended ({self.popen.returncode}):\n{self.output()}"
                )
            time.sleep(0.1)
        raise RuntimeError(f"no {marker!r} from {self.log.name} in {timeout_s:.0f} s")

    def kill(self) -> None:
        """SIGKILL the process (no chance to give back its leases) and reap it."""
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(30)

    def stop(self, timeout_s: float = 20) -> None:
        """SIGTERM the process, then SIGKILL it if it has not ended within ``timeout_s``."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        self.popen.wait(30)
