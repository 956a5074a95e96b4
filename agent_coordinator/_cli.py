"""``agentshape serve``, ``runner``, ``mcp`` and ``db prune``: the service from the shell.

:func:`register` adds the commands to an argparse sub-parsers action (the ``agentshape`` command
and ``python -m agent_coordinator`` both use it); each handler is ``fn(args, out, err) -> int``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TextIO, TypeAlias

from agent_contracts._call_limits import CallLimits
from agent_contracts._errors import ConfigError
from agent_coordinator._call_limits import StoreCallLimiter
from agent_coordinator._errors import StoreUnavailable
from agent_coordinator._execution import Execution
from agent_coordinator._retention import DAY_S, MAX_DAYS, Sweeper, parse_age, prune
from agent_coordinator._runner import POLL_S, WOKEN_POLL_S, Runner
from agent_coordinator._runner_processes import (
    CHANNEL,
    DATABASE_ENV,
    EXIT_WITH_PARENT,
    RunnerProcesses,
    ServeChannel,
    exit_with_parent,
)
from agent_coordinator._store import DEFAULT_DATABASE, DEFAULT_MAX_CLAIMS, SqlStore, open_store
from agent_coordinator._store.call_limits import RATE_WINDOW_S
from agent_coordinator._store.records import Claim, RunRecord
from agent_coordinator._webhooks import SECRET_ENV, WebhookSettings
from agent_core._fleet import load_fleet
from agent_core._registry import DEFAULT_REGISTRY_PATH, SchemaRegistry
from agent_executor import DEFAULT_ANALYTICS_DIR, ENV_ANALYTICS_DIR, JsonlAnalytics
from agent_executor._providers.resolve import KNOWN_PREFIXES
from agent_executor._tools import KNOWN_TOOLS

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from agent_coordinator._service.services import Services

# FastAPI and uvicorn (the ``server`` extra) are imported by ``serve`` itself, so adding these
# commands to ``agentshape`` costs nothing and works without the extra until ``serve`` is run.

__all__ = [
    "DEFAULT_MCP_PORT",
    "DEFAULT_PORT",
    "TOKEN_ENV",
    "db_prune_command",
    "mcp_command",
    "register",
    "runner_command",
    "serve_command",
]

DEFAULT_PORT = 8600
"""The port ``serve`` listens on unless told otherwise."""
_RUNNER_STOP_S = 30.0
"""Seconds a runner process ``serve`` started has to stop (its runs in flight get the runner's
grace period, then go back to the queue) before it is killed."""
_SHUTDOWN_GRACE_S = 3
"""Seconds open HTTP responses get when the server is asked to stop."""
DEFAULT_MCP_PORT = 8601
"""The port ``mcp --http`` listens on unless told otherwise."""
TOKEN_ENV = "AGENTSHAPE_TOKEN"
"""The environment variable holding the bearer token when ``--token`` is not given."""

_LISTED = 50
"""Session ids ``db prune`` prints at most."""

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agents-dir", type=Path, default=Path("agents"), help="the fleet (default ./agents)"
    )
    parser.add_argument(
        "--database",
        default=None,
        help=f"a SQLite file or a postgresql://user:pass@host/db URL (default ${DATABASE_ENV}, "
        f"else {DEFAULT_DATABASE})",
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
    parser.add_argument(
        "--analytics-dir",
        type=Path,
        default=None,
        help=f"where run events go as JSONL, as the command line writes them (default "
        f"${ENV_ANALYTICS_DIR}, else {DEFAULT_ANALYTICS_DIR})",
    )
    parser.add_argument("--no-analytics", action="store_true", help="write no JSONL analytics log")
    parser.add_argument(
        "--concurrency",
        type=_positive,
        default=None,
        help="most calls to one model in flight at once, across every process on the database",
    )
    parser.add_argument(
        "--rpm",
        type=_positive,
        default=None,
        help="most calls to one model a minute, across every process on the database",
    )
    parser.add_argument(
        "--tpm",
        type=_positive,
        default=None,
        help="most tokens one model's calls use a minute, across every process on the database",
    )
    parser.add_argument(
        "--batch-poll",
        type=float,
        default=10.0,
        help="seconds between the first two polls of a provider batch (then 1.5 times longer "
        "each time, up to two minutes) (%(default)s)",
    )
    parser.add_argument(
        "--poll",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds an idle runner waits before looking for stored runs again when nothing "
        f"wakes it (default {POLL_S} on SQLite; {WOKEN_POLL_S} on PostgreSQL, where "
        "the database wakes it when a run is stored)",
    )
    parser.add_argument(
        "--max-claims",
        type=_positive,
        default=DEFAULT_MAX_CLAIMS,
        help="times a run's lease may run out before it fails: lease_exhausted (%(default)s)",
    )
    # Not shown in --help: the tests shorten the minute --rpm and --tpm count over, to see the
    # limit hold without waiting a real one.
    parser.add_argument(
        "--rate-window", type=_seconds, default=RATE_WINDOW_S, help=argparse.SUPPRESS
    )


def _database(args: argparse.Namespace) -> str | None:
    """Return the database named by ``--database``, else by the environment (``None``: default)."""
    return args.database or os.environ.get(DATABASE_ENV) or None


def _processes(text: str) -> int:
    """Read ``--processes``: a whole number of at least 1, or ``auto`` for the host's cores."""
    if text == "auto":
        return os.cpu_count() or 1
    return _positive(text)


def _positive(text: str) -> int:
    """Read a whole number of at least 1 (argparse reports a bad one and exits 2)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _seconds(text: str) -> float:
    """Read a positive number of seconds (argparse reports a bad one and exits 2)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return seconds


def _poll_s(args: argparse.Namespace, store: SqlStore) -> float:
    """Return ``--poll``, or the default for a store that does or does not wake runners."""
    if args.poll is not None:
        return float(args.poll)
    return WOKEN_POLL_S if store.wakes_runners else POLL_S


def _http(parser: argparse.ArgumentParser, *, port: int, when: str = "") -> None:
    """Add the options of serving HTTP; ``when`` begins their help (``with --http: ``)."""
    parser.add_argument("--host", default="127.0.0.1", help=f"{when}the address (127.0.0.1)")
    parser.add_argument("--port", type=int, default=port, help=f"{when}0 picks a free port")
    parser.add_argument(
        "--token",
        default=None,
        help=f"{when}require 'Authorization: Bearer TOKEN' on every endpoint but /health and "
        f"/ready (default ${TOKEN_ENV})",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help=f"{when}a Host name answered besides the loopback names and --host (repeatable; "
        "'*' for any, which lets web pages reach it through DNS rebinding)",
    )


def _retain_days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of days")
    if days > MAX_DAYS:
        raise argparse.ArgumentTypeError(f"{text!r} is more than {MAX_DAYS:g} days (100 years)")
    return days


def _retention(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retain-days",
        type=_retain_days,
        default=None,
        metavar="N",
        help="delete ended sessions last updated more than N days ago, now and every hour "
        "(default: keep everything)",
    )


def register(commands: Subcommands) -> None:
    """Add ``serve``, ``runner``, ``mcp`` and ``db prune`` to the command line."""
    serve = commands.add_parser(
        "serve",
        help="serve the HTTP API with in-process runners (exit 0 on shutdown, 2 on bad config)",
    )
    _common(serve)
    _http(serve, port=DEFAULT_PORT)
    serve.add_argument("--workers", type=int, default=4, help="in-process runners (0 for none)")
    serve.add_argument(
        "--processes",
        type=_processes,
        default=1,
        metavar="N",
        help="run runs in N processes: this one and N-1 runner processes it starts, restarts "
        "if one dies, and stops, each with --workers runners (default 1; auto: one a core)",
    )
    serve.add_argument(
        "--webhook-secret",
        default=None,
        help=f"sign webhook deliveries with this HMAC-SHA256 key (default ${SECRET_ENV}); "
        "without one, runs may not name a webhook",
    )
    serve.add_argument(
        "--webhook-allow",
        action="append",
        default=[],
        metavar="HOST",
        help="a host webhooks may be delivered to (repeatable); without it, any host",
    )
    serve.add_argument(
        "--evals-dir",
        type=Path,
        metavar="DIR",
        help="show the agentshape eval reports found here (DIR/eval.json and DIR/*/eval.json, "
        "written by agentshape eval --out) on the dashboard's Evals page",
    )
    _retention(serve)
    serve.set_defaults(handler=serve_command)
    runner = commands.add_parser(
        "runner",
        help="run stored runs from another process or host against the same database",
    )
    _common(runner)
    runner.add_argument("--workers", type=int, default=4, help="runs executed at once")
    runner.add_argument(EXIT_WITH_PARENT, type=int, default=None, help=argparse.SUPPRESS)
    runner.add_argument(CHANNEL, type=int, default=None, help=argparse.SUPPRESS)
    _retention(runner)
    runner.set_defaults(handler=runner_command)
    mcp = commands.add_parser(
        "mcp",
        help="serve the fleet as MCP tools with enforced output: stdio, or streamable HTTP",
    )
    _common(mcp)
    mcp.add_argument(
        "--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio"
    )
    _http(mcp, port=DEFAULT_MCP_PORT, when="with --http: ")
    mcp.add_argument("--workers", type=int, default=4, help="in-process runners (0 for none)")
    mcp.set_defaults(handler=mcp_command)
    db = commands.add_parser("db", help="look after the service's database")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    db_prune = db_commands.add_parser(
        "prune",
        help="delete ended sessions (with their runs, attempts, events and child sessions) "
        "last updated longer ago than an age",
    )
    db_prune.add_argument(
        "--older-than", required=True, metavar="AGE", help="such as 30d, 12h or 90m"
    )
    db_prune.add_argument(
        "--database",
        default=None,
        help=f"a SQLite file or a postgresql://user:pass@host/db URL (default ${DATABASE_ENV}, "
        f"else {DEFAULT_DATABASE})",
    )
    db_prune.add_argument(
        "--dry-run", action="store_true", help="say what would be deleted, delete nothing"
    )
    db_prune.set_defaults(handler=db_prune_command)


def _open(args: argparse.Namespace) -> tuple[SqlStore, Execution]:
    fleet = load_fleet(
        args.agents_dir,
        known_tools=Execution.known_tools(KNOWN_TOOLS),
        known_model_prefixes=KNOWN_PREFIXES,
    )
    try:
        store = open_store(_database(args))
    except StoreUnavailable as error:  # at start, a --database to check, not a fault to ride out
        raise ConfigError(error.message) from error
    execution = Execution(
        fleet,
        SchemaRegistry(args.registry),
        default_model=args.model,
        env=os.environ,
        workspace=args.workspace,
        analytics=None if args.no_analytics else JsonlAnalytics(_analytics_dir(args)),
        limiter=StoreCallLimiter(store, window_s=args.rate_window),
        call_limits=CallLimits(
            concurrency=args.concurrency,
            requests_per_minute=args.rpm,
            tokens_per_minute=args.tpm,
        ),
    )
    return store, execution


def _analytics_dir(args: argparse.Namespace) -> Path:
    """Return where the JSONL analytics log goes: the command line's choice, in its order."""
    chosen = args.analytics_dir or os.environ.get(ENV_ANALYTICS_DIR) or DEFAULT_ANALYTICS_DIR
    return Path(chosen)


def _describe(store: SqlStore, execution: Execution, args: argparse.Namespace) -> str:
    agents = len(execution.fleet)
    model = args.model or "each agent's, else from the API keys in the environment"
    analytics = "off" if args.no_analytics else f"{_analytics_dir(args)}/events-YYYY-MM-DD.jsonl"
    return (
        f"  fleet:    {execution.fleet.directory} ({agents} agent{'s' if agents != 1 else ''})\n"
        f"  database: {store.url}\n"
        f"  registry: {execution.registry.path}\n"
        f"  model:    {model}\n"
        f"  analytics: {analytics}\n"
        f"  limits:   {_describe_limits(execution.call_limits)}\n"
    )


def _describe_limits(limits: CallLimits | None) -> str:
    """Return the startup line's account of the command line's call limits."""
    if limits is None or not limits.any():
        return "each agent's llm.limits (none given here), shared through the database"
    parts = [
        f"{value} {name}"
        for name, value in (
            ("in flight", limits.concurrency),
            ("requests/min", limits.requests_per_minute),
            ("tokens/min", limits.tokens_per_minute),
        )
        if value is not None
    ]
    return ", ".join(parts) + " per model, shared through the database"


def _model_problems(execution: Execution) -> str:
    """Return a banner line for each model the fleet's runs would use that cannot be made."""
    return "".join(
        f"  warning:  {error} (the runs of {', '.join(agents)} fail until it is fixed)\n"
        for error, agents in execution.model_problems()
    )


def _services(args: argparse.Namespace) -> Services:
    from agent_coordinator._service.services import Limits, Services

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
            poll_s=_poll_s(args, store),
            max_claims=args.max_claims,
            on_finished=services.notifier.notify,
            batch_poll_s=args.batch_poll,
        )
    return services


def _webhooks(args: argparse.Namespace) -> tuple[WebhookSettings | None, str]:
    """Return ``serve``'s webhook settings and how the banner describes them."""
    secret = args.webhook_secret or os.environ.get(SECRET_ENV) or None
    allow = frozenset(host.strip().lower() for host in args.webhook_allow if host.strip())
    if secret is None:
        if allow:
            raise ConfigError(
                f"--webhook-allow needs a webhook secret (--webhook-secret or ${SECRET_ENV})"
            )
        return None, "off (no --webhook-secret)"
    hosts = ", ".join(sorted(allow)) if allow else "any host (see --webhook-allow)"
    return WebhookSettings(secret=secret, allow=allow), f"signed, to {hosts}"


def _listen(host: str, port: int) -> tuple[socket.socket, str]:
    """Bind and listen first, so port 0 is known and connections queue from the banner on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    # Listening before the banner is printed: a client that reads the banner and connects at
    # once waits in the backlog until the app has started, instead of being refused.
    sock.listen(2048)
    bound, port = sock.getsockname()[:2]
    shown = f"[{bound}]" if family == socket.AF_INET6 else bound
    return sock, f"http://{shown}:{port}"


def _serve(app: ASGIApp, sock: socket.socket, services: Services) -> None:
    import uvicorn

    # Open responses (a dashboard's event stream, a ?wait) get a few seconds on shutdown, then
    # the runners stop (with their own grace period for runs in flight).
    config = uvicorn.Config(
        app,
        log_level="warning",
        # serve shows warnings and errors only: access lines (INFO) would never be shown, yet
        # uvicorn builds each one's arguments on every request while the logger has a handler.
        access_log=False,
        lifespan="on",
        timeout_keep_alive=75,
        timeout_graceful_shutdown=_SHUTDOWN_GRACE_S,
    )

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # Requests waiting for their runs answer now (202, the run id), before the grace
            # period ends and cuts them off with a 500.
            super().handle_exit(sig, frame)
            services.notifier.stop()

    server = Server(config)
    # uvicorn shuts down gracefully on SIGINT/SIGTERM and then re-raises the signal to the
    # handler it found; a no-op handler makes that a normal exit, after "stopped" is printed.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _ignore_signal)
    try:
        server.run(sockets=[sock])
    finally:
        services.store.close()
        sock.close()


class _InfoLines(logging.Handler):
    """Print a logger's INFO lines to a stream, one line each (its warnings go to the root's)."""

    def __init__(self, err: TextIO) -> None:
        super().__init__(logging.INFO)
        self.err = err
        self.addFilter(lambda record: record.levelno < logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``agentshape: <message>``."""
        try:
            print(f"agentshape: {record.getMessage()}", file=self.err, flush=True)
        except Exception:  # a closed stream: as logging's own handlers do
            self.handleError(record)


def _log_to(err: TextIO) -> None:
    """Send warnings and errors to ``err``, plainly, before anything else configures logging.

    The ``agentshape`` command has given the root logger its warning printer already (then
    this adds none); ``python -m agent_coordinator`` gets one here. Either way the root's
    printer takes warnings only, and what retention deleted gets a line of its own.
    """
    root = logging.getLogger()
    if not root.handlers:
        # Without this the mcp SDK's server sets the root logger to INFO with a rich console
        # handler, and rendering every provider call's httpx log line costs more CPU than the run.
        printer = logging.StreamHandler(err)
        printer.setLevel(logging.WARNING)
        printer.setFormatter(logging.Formatter("agentshape: %(levelname)s %(name)s: %(message)s"))
        root.addHandler(printer)
        root.setLevel(logging.WARNING)
    # What retention deleted is worth a line each sweep: the operator asked for deletions.
    retention = logging.getLogger("agent_coordinator._retention")
    retention.setLevel(logging.INFO)
    for handler in retention.handlers:
        if isinstance(handler, _InfoLines):
            handler.err = err
            break
    else:
        retention.addHandler(_InfoLines(err))


def _settle(execution: Execution) -> None:
    """Import the providers' SDKs now, then keep the garbage collector out of the way."""
    # What exists now lives as long as the process, so it is frozen out of full collections; a run's
    # containers are freed by reference counting, so young collections start at 50,000 allocations.
    execution.warm()
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


def _has_mcp() -> bool:
    return importlib.util.find_spec("mcp") is not None


def serve_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve the API until interrupted; print where it listens, the fleet and the database."""
    _need_server("serve")
    _log_to(err)
    from agent_coordinator._api.app import create_app
    from agent_coordinator._service.hosts import AllowedHosts

    services = _services(args)
    services.webhooks, webhooks = _webhooks(args)
    services.evals_dir = args.evals_dir
    if args.retain_days is not None:
        services.sweeper = Sweeper(services.store, args.retain_days)
    mcp = _has_mcp()
    hosts = AllowedHosts.for_address(args.host, args.allowed_host)
    app = create_app(services, mcp_host=args.host if mcp else None, hosts=hosts)
    _settle(services.execution)
    processes = _runner_processes(args)
    services.runner_processes = processes
    sock, url = _listen(args.host, args.port)
    processes.start()
    out.write(
        f"agentshape serve: listening on {url} (docs at /docs)\n"
        + _describe(services.store, services.execution, args)
        + f"  runners:  {args.workers} in this process{_describe_processes(args, processes)}\n"
        + f"  auth:     {'bearer token' if services.token else 'none'}\n"
        + f"  webhooks: {webhooks}\n"
        + (f"  evals:    {args.evals_dir}\n" if args.evals_dir else "")
        + f"  hosts:    {hosts.describe()}\n"
        + _describe_retention(args)
        + (
            f"  mcp:      {url}/mcp (streamable HTTP)\n"
            if mcp
            else "  mcp:      off (pip install 'agentshape[mcp]')\n"
        )
    )
    out.flush()
    try:
        _serve(app, sock, services)
    finally:
        processes.stop()
    out.write("agentshape serve: stopped\n")
    return 0


def _runner_processes(args: argparse.Namespace) -> RunnerProcesses:
    """Return (not started) the runner processes ``--processes`` asks for, with serve's options."""
    if args.processes > 1 and args.workers < 1:
        raise ConfigError(
            "--processes runs runs in more processes: it needs --workers of 1 or more"
        )
    argv = [
        *("--agents-dir", str(args.agents_dir), "--registry", str(args.registry)),
        *("--workspace", str(args.workspace), "--lease", str(args.lease)),
        *("--max-claims", str(args.max_claims), "--workers", str(args.workers)),
        *("--batch-poll", str(args.batch_poll), "--rate-window", str(args.rate_window)),
    ]
    for option, value in (
        ("--model", args.model),
        ("--analytics-dir", args.analytics_dir),
        ("--concurrency", args.concurrency),
        ("--rpm", args.rpm),
        ("--tpm", args.tpm),
        ("--poll", args.poll),
    ):
        if value is not None:
            argv += [option, str(value)]
    if args.no_analytics:
        argv.append("--no-analytics")
    # The database (a URL may hold a password) goes in their environment, not on their command
    # line, which every user of the host can read.
    return RunnerProcesses(
        args.processes - 1, argv, database=_database(args), stop_s=_RUNNER_STOP_S
    )


def _describe_processes(args: argparse.Namespace, processes: RunnerProcesses) -> str:
    if not processes.pids:
        return ""
    pids = ", ".join(str(pid) for pid in processes.pids)
    return f", {args.workers} in each runner process ({pids})"


def _describe_retention(args: argparse.Namespace) -> str:
    if args.retain_days is None:
        return "  retain:   everything\n"
    return f"  retain:   {args.retain_days:g} days (ended sessions older are deleted hourly)\n"


def _need_server(command: str, extra: str = "server") -> None:
    """Raise ConfigError naming the extra when FastAPI/uvicorn (or the mcp SDK) are missing."""
    modules = ["fastapi", "uvicorn", *(["mcp"] if "mcp" in extra else [])]
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"agentshape {command} needs {', '.join(missing)}: pip install 'agentshape[{extra}]'"
        )


def mcp_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve the fleet as MCP tools over stdio (or streamable HTTP with ``--http``)."""
    # Over stdio the protocol owns standard output, so what this prints goes to err.
    _need_server("mcp", "server,mcp")
    import anyio

    from agent_coordinator._mcp_server import build_mcp_server, mcp_app
    from agent_coordinator._service.hosts import AllowedHosts

    services = _services(args)
    if args.http:
        hosts = AllowedHosts.for_address(args.host, args.allowed_host)
        app = mcp_app(services, hosts=hosts)
        sock, url = _listen(args.host, args.port)
        out.write(
            f"agentshape mcp: streamable HTTP on {url}/mcp\n"
            + _describe(services.store, services.execution, args)
            + f"  auth:     {'bearer token' if services.token else 'none'}\n"
            + f"  hosts:    {hosts.describe()}\n"
            + _model_problems(services.execution)
        )
        out.flush()
        _serve(app, sock, services)
        out.write("agentshape mcp: stopped\n")
        return 0
    err.write(
        "agentshape mcp: serving MCP over stdio\n"
        + _describe(services.store, services.execution, args)
        + _model_problems(services.execution)
    )
    err.flush()
    server = build_mcp_server(services)

    async def main() -> None:
        runner = services.runner
        if runner is not None:
            runner.start()
        try:
            await server.run_stdio_async()
        finally:
            if runner is not None:
                await runner.stop()

    try:
        anyio.run(main)
    finally:
        services.store.close()
    return 0


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """Return uvloop's loop when it is installed (the server extra), as uvicorn picks for serve."""
    # A runner's CPU goes to its model calls' HTTP and its store calls' hand-offs, on the loop.
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def _ignore_signal(signum: int, frame: object) -> None:
    """Do nothing: the server has already stopped when uvicorn passes the signal on."""


def runner_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run stored runs until SIGINT or SIGTERM, then requeue what is still running."""
    if args.exit_with_parent is not None:  # a runner process serve --processes started
        exit_with_parent(args.exit_with_parent)
    _log_to(err)
    store, execution = _open(args)
    channel = None if args.serve_channel is None else ServeChannel(args.serve_channel)
    handed: set[str] = set()  # the runs serve handed this process whose work is not done

    def finished(run: RunRecord) -> None:
        # PostgreSQL tells serve of the runs ended here; on SQLite only the channel does. A run
        # serve handed over is told of once, when its work is done.
        if channel is not None and not store.wakes_runners and run.id not in handed:
            channel.ended(run.id)

    runner = Runner(
        store,
        execution,
        workers=args.workers,
        lease_s=args.lease,
        poll_s=_poll_s(args, store),
        max_claims=args.max_claims,
        on_finished=finished,
        batch_poll_s=args.batch_poll,
    )
    sweeper = None if args.retain_days is None else Sweeper(store, args.retain_days)
    out.write(
        f"agentshape runner {runner.id}: {args.workers} workers\n"
        + _describe(store, execution, args)
        + _describe_retention(args)
    )
    out.flush()
    _settle(execution)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if channel is not None:
            served = channel

            def done(run_id: str) -> None:
                handed.discard(run_id)
                served.done(run_id)

            def take(claim: Claim) -> None:
                handed.add(claim.run.id)
                runner.take_handed(claim, done)

            channel.listen(runner.wake, take)
            channel.hello(runner.id, args.workers)
        if sweeper is None:
            await runner.run_until(stop)
        else:
            await asyncio.gather(runner.run_until(stop), sweeper.run_until(stop))

    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as loop:
            loop.run(main())
    finally:
        store.close()
    out.write(f"agentshape runner {runner.id}: stopped\n")
    return 0


def db_prune_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Delete ended sessions older than ``--older-than``; print what was (or would be) deleted."""
    age = parse_age(args.older_than)
    database = _database(args)
    where = str(database or DEFAULT_DATABASE)
    if not where.startswith(("postgresql://", "postgres://")):
        path = Path(where.removeprefix("sqlite:///").removeprefix("sqlite://"))
        # Opening a missing file would make a new, empty store: a --database naming one is a
        # mistake; the default one missing means nothing was stored here yet.
        if not path.is_file() and database is not None:
            named = "--database" if args.database else DATABASE_ENV
            raise ConfigError(f"{named} {where}: no such file; nothing to prune")
        if not path.is_file() or path.stat().st_size == 0:
            out.write(f"agentshape db prune: no store at {where} yet; nothing to prune\n")
            return 0
    try:
        store = open_store(database, migrate=not args.dry_run)
    except StoreUnavailable as error:
        raise ConfigError(error.message) from error
    if args.dry_run and store.migrate(apply=False) == 0:  # a database with no tables yet
        store.close()
        out.write(f"agentshape db prune: no store at {store.url} yet; nothing to prune\n")
        return 0
    before = time.time() - age
    try:
        pruned = prune(store, before=before, dry_run=args.dry_run)
    finally:
        store.close()
    when = datetime.fromtimestamp(before, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    verb = "would delete" if args.dry_run else "deleted"
    out.write(
        f"agentshape db prune: {verb} {len(pruned.sessions)} sessions ({pruned.runs} runs) "
        f"last updated before {when} ({age / DAY_S:g} days ago) from {store.url}\n"
    )
    for session_id in pruned.sessions[:_LISTED]:
        out.write(f"  {session_id}\n")
    if len(pruned.sessions) > _LISTED:
        out.write(f"  ... and {len(pruned.sessions) - _LISTED} more\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m agent_coordinator serve|runner ...`` and return its exit code."""
    from agent_contracts._errors import AgentshapeError

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
