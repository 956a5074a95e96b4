"""A real service for tests: uvicorn on a free loopback port in a thread, httpx as the client.

Also a throwaway PostgreSQL cluster (Debian's ``postgresql`` binaries, ``initdb``/``pg_ctl`` in a
temporary directory, run as the ``postgres`` user when the tests run as root).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest
import uvicorn

from agent_coordinator import Execution, Runner, SqlStore, open_store
from agent_coordinator._api.app import create_app
from agent_coordinator._service.services import Limits, Services
from agent_coordinator._store import NewRun, RunInput
from agent_coordinator._webhooks import WebhookSettings
from agent_core import SchemaRegistry, load_fleet
from agent_executor import KNOWN_TOOLS

REVIEW_SCHEMA = {
    "type": "object",
    "required": ["summary", "approval"],
    "properties": {
        "summary": {"type": "string", "minLength": 1},
        "approval": {"enum": ["approve", "request_changes", "comment"]},
    },
    "additionalProperties": False,
}

FLEET = {
    "reviewer": {
        "id": "reviewer",
        "description": "Reviews pull requests.",
        "system_prompt": "You review pull requests.",
        "parameters_schema": {
            "type": "object",
            "required": ["pr_url"],
            "properties": {
                "pr_url": {"type": "string"},
                "focus": {"type": "array", "items": {"type": "string"}},
            },
        },
        "output_schema": REVIEW_SCHEMA,
    },
    "writer": {"id": "writer", "system_prompt": "You write short answers."},
    "orchestrator": {
        "id": "orchestrator",
        "system_prompt": "You hand work to other agents.",
        "tools": ["agents:start_session"],
    },
    "summariser": {
        "id": "summariser",
        "system_prompt": "You summarise text.",
        "default_output_schema": {
            "type": "object",
            "required": ["summary"],
            "properties": {"summary": {"type": "string"}},
        },
    },
}


def write_fleet(directory: Path) -> Path:
    """Write the test fleet (JSON is YAML) and return its directory."""
    for name, config in FLEET.items():
        folder = directory / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "agent.yml").write_text(json.dumps(config))
    return directory


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class Service:
    """The API served for real on 127.0.0.1, with in-process runners."""

    def __init__(
        self,
        tmp: Path,
        database: str,
        *,
        model: str | None = "test",
        env: Mapping[str, str] | None = None,
        token: str | None = None,
        workers: int = 2,
        limits: Limits | None = None,
        lease_s: float = 5.0,
        mcp: bool = False,
        webhooks: WebhookSettings | None = None,
    ) -> None:
        fleet = load_fleet(
            write_fleet(tmp / "agents"), known_tools=Execution.known_tools(KNOWN_TOOLS)
        )
        self.store: SqlStore = open_store(database)
        self.execution = Execution(
            fleet,
            SchemaRegistry(tmp / "schemas.db"),
            default_model=model,
            env=dict(env or {}),
            workspace=tmp,
        )
        self.services = Services(
            store=self.store,
            execution=self.execution,
            token=token,
            limits=limits or Limits(),
            webhooks=webhooks,
        )
        if workers:
            self.services.runner = Runner(
                self.store,
                self.execution,
                workers=workers,
                lease_s=lease_s,
                poll_s=0.1,
                grace_s=2.0,
                on_finished=self.services.notifier.notify,
            )
        # Bound here and handed to uvicorn: a port found free and bound later could be taken
        # by another test meanwhile.
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(self.services, mcp_host="127.0.0.1" if mcp else None),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test service did not start")
            time.sleep(0.02)
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def run(self, body: dict[str, object], *, wait: float = 20, **kwargs: object) -> httpx.Response:
        """POST /runs and wait for the end."""
        return self.client.post("/runs", params={"wait": wait}, json=body, **kwargs)  # type: ignore[arg-type]

    def close(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self._socket.close()
        self.store.close()


# PostgreSQL -------------------------------------------------------------------------------------


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class Postgres:
    """A throwaway PostgreSQL cluster on a free loopback port."""

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
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        for tries_left in reversed(range(5)):
            try:
                self.start()
                break
            except subprocess.CalledProcessError:
                # The port found free was taken before the server bound it (another test's
                # server): a new one. Any other failure is raised.
                if tries_left == 0 or "could not bind" not in self._log():
                    raise
                self.port = free_port()
        self._count = 0

    def start(self) -> None:
        """Start the server (again, after :meth:`stop_server`), on the same port."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-w",
            "-o",
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=300",
            "start",
        )

    def _log(self) -> str:
        try:
            return (self.root / "log").read_text(errors="replace")
        except OSError:
            return ""

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server (``pg_ctl stop -m mode``), keeping its data for :meth:`start`."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self._user, str(self.bindir / tool), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=self.root,
        )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        self._count += 1
        name = f"t{os.getpid()}_{self._count}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        """Stop the server and remove its directory (a test session's cluster is 40 MB to 1 GB).

        The directory is removed in the background (:func:`remove_in_background`) once the
        server has stopped; at once when it could not be stopped.
        """
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        remove_in_background(self.root)


def throwaway_cluster(prefix: str) -> Iterator[Postgres]:
    """Yield a PostgreSQL cluster in a new temporary directory, then stop it and remove it.

    Skips the test, saying why, where PostgreSQL is not installed or does not start.
    """
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed here (apt-get install postgresql); .ci/run does")
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        cluster = Postgres(root)
    except Exception as error:  # pragma: no cover - depends on the machine
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"PostgreSQL could not be started: {error}")
    try:
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            cluster.stop()


def remove_in_background(directory: Path) -> None:
    """Remove ``directory`` in a process of its own that outlives the tests.

    A session's cluster holds a database a test, tens of thousands of files: on a busy disk
    removing them is slow, and nothing the tests check waits for it.
    """
    subprocess.run(
        ["sh", "-c", 'rm -rf -- "$0" &', str(directory)],
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def new_run(run_id: str) -> NewRun:
    """A run starting session ``ses_<run_id>`` of agent ``grader``, for a store test."""
    return NewRun(
        id=run_id,
        session_id=f"ses_{run_id}",
        kind="start_session",
        agent_name="grader",
        input=RunInput(prompt="Grade the notes."),
    )
