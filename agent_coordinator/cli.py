"""``agentshape serve`` and ``agentshape runner``: the service and extra runners, from the shell.

:func:`register` adds both commands to an argparse sub-parsers action (the ``agentshape`` command
and ``python -m agent_coordinator`` both use it); each handler is ``fn(args, out, err) -> int``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TextIO, TypeAlias

from agent_contracts.errors import ConfigError
from agent_coordinator.execution import Execution
from agent_coordinator.runner import Runner
from agent_coordinator.store import DEFAULT_DATABASE, SqlStore, open_store
from agent_core.fleet import load_fleet
from agent_core.registry import DEFAULT_REGISTRY_PATH, SchemaRegistry
from agent_executor.providers.resolve import KNOWN_PREFIXES
from agent_executor.tools import KNOWN_TOOLS

# FastAPI and uvicorn (the ``server`` extra) are imported by ``serve`` itself, so adding these
# commands to ``agentshape`` costs nothing and works without the extra until ``serve`` is run.

__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "register", "runner_command", "serve_command"]

DEFAULT_PORT = 8600
"""The port ``serve`` listens on unless told otherwise."""
TOKEN_ENV = "AGENTSHAPE_TOKEN"
"""The environment variable holding the bearer token when ``--token`` is not given."""

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agents-dir", type=Path, default=Path("agents"), help="the fleet (default ./agents)"
    )
    parser.add_argument(
        "--database",
        default=None,
        help=f"a SQLite file (default {DEFAULT_DATABASE}) or a postgresql://user:pass@host/db URL",
    )
    parser.add_argument(
        "--registry",
        type=Path,
        default=DEFAULT_REGISTRY_PATH,
        help=f"the named schema registry (default {DEFAULT_REGISTRY_PATH})",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="the model for runs whose request and agent name none (such as openai:gpt-4.1-mini "
        "or test); without it and without an API key such a run fails",
    )
    parser.add_argument(
        "--workspace", type=Path, default=Path("."), help="what the agents' fs tools may read"
    )
    parser.add_argument(
        "--lease", type=float, default=30.0, help="seconds a runner's claim lasts unrenewed"
    )


def register(commands: Subcommands) -> None:
    """Add ``serve`` and ``runner`` to the command line."""
    serve = commands.add_parser(
        "serve",
        help="serve the HTTP API with in-process runners (exit 0 on shutdown, 2 on bad config)",
    )
    _common(serve)
    serve.add_argument("--host", default="127.0.0.1", help="the address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    serve.add_argument("--workers", type=int, default=4, help="in-process runners (0 for none)")
    serve.add_argument(
        "--token",
        default=None,
        help=f"require 'Authorization: Bearer TOKEN' on every endpoint but /health "
        f"(default ${TOKEN_ENV})",
    )
    serve.set_defaults(handler=serve_command)
    runner = commands.add_parser(
        "runner",
        help="run stored runs from another process or host against the same database",
    )
    _common(runner)
    runner.add_argument("--workers", type=int, default=4, help="runs executed at once")
    runner.set_defaults(handler=runner_command)


def _open(args: argparse.Namespace) -> tuple[SqlStore, Execution]:
    fleet = load_fleet(
        args.agents_dir,
        known_tools=Execution.known_tools(KNOWN_TOOLS),
        known_model_prefixes=KNOWN_PREFIXES,
    )
    execution = Execution(
        fleet,
        SchemaRegistry(args.registry),
        default_model=args.model,
        env=os.environ,
        workspace=args.workspace,
    )
    return open_store(args.database), execution


def _describe(store: SqlStore, execution: Execution, args: argparse.Namespace) -> str:
    agents = len(execution.fleet)
    model = args.model or "each agent's, else from the API keys in the environment"
    return (
        f"  fleet:    {execution.fleet.directory} ({agents} agent{'s' if agents != 1 else ''})\n"
        f"  database: {store.url}\n"
        f"  registry: {execution.registry.path}\n"
        f"  model:    {model}\n"
    )


def serve_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve the API until interrupted; print where it listens, the fleet and the database."""
    try:
        import uvicorn

        from agent_coordinator.api import Limits, Services, create_app
    except ImportError as error:
        raise ConfigError(
            f"agentshape serve needs the server extra: pip install 'agentshape[server]' ({error})"
        ) from error

    store, execution = _open(args)
    services = Services(
        store=store,
        execution=execution,
        token=args.token or os.environ.get(TOKEN_ENV) or None,
        limits=Limits(),
    )
    if args.workers > 0:
        services.runner = Runner(
            store,
            execution,
            workers=args.workers,
            lease_s=args.lease,
            on_finished=services.notifier.notify,
        )
    app = create_app(services)
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    out.write(
        f"agentshape serve: listening on http://{shown}:{port} (docs at /docs)\n"
        + _describe(store, execution, args)
        + f"  runners:  {args.workers} in this process\n"
        + f"  auth:     {'bearer token' if services.token else 'none'}\n"
    )
    out.flush()
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=75)
    server = uvicorn.Server(config)
    # uvicorn shuts down gracefully on SIGINT/SIGTERM and then re-raises the signal to the
    # handler it found; a no-op handler makes that a normal exit, after "stopped" is printed.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _ignore_signal)
    try:
        server.run(sockets=[sock])
    finally:
        store.close()
        sock.close()
    out.write("agentshape serve: stopped\n")
    return 0


def _ignore_signal(signum: int, frame: object) -> None:
    """Do nothing: the server has already stopped when uvicorn passes the signal on."""


def runner_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run stored runs until SIGINT or SIGTERM, then requeue what is still running."""
    store, execution = _open(args)
    runner = Runner(store, execution, workers=args.workers, lease_s=args.lease)
    out.write(
        f"agentshape runner {runner.id}: {args.workers} workers\n"
        + _describe(store, execution, args)
    )
    out.flush()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await runner.run_until(stop)

    try:
        asyncio.run(main())
    finally:
        store.close()
    out.write(f"agentshape runner {runner.id}: stopped\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m agent_coordinator serve|runner ...`` and return its exit code."""
    from agent_contracts.errors import AgentshapeError

    parser = argparse.ArgumentParser(
        prog="python -m agent_coordinator", description="The agentshape coordinator service."
    )
    register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args, sys.stdout, sys.stderr)
    except AgentshapeError as error:
        print(f"agentshape: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"agentshape: {error}", file=sys.stderr)
        return 2
    return code
