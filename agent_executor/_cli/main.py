"""The ``agentshape`` command line: the only place that prints and picks exit codes.

Commands: ``run``, ``run-many``, ``eval``, ``list``, ``show``, ``validate``, ``codegen``,
``schemas`` and ``analytics``. This module builds the parser, runs ``run`` itself and dispatches
the others to their modules in this package (``batch``, ``evals``, ``fleet``, ``inspect``,
``schemas``, ``analytics``, ``init``).

Exit codes: 0 done (the run completed, the output is valid), 1 a run failed (or an output is
invalid, a config has problems), 2 bad usage or config. A mistake on the command line is one
``agentshape: ...`` line on standard error, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, TextIO, cast

from agent_contracts._errors import AgentshapeError
from agent_contracts._runs import RunRequest, RunResult
from agent_contracts._version import __version__
from agent_core._json_text import dump_json, unencodable
from agent_executor._cli import analytics as cli_analytics
from agent_executor._cli import batch as cli_batch
from agent_executor._cli import evals as cli_evals
from agent_executor._cli import fleet as cli_fleet
from agent_executor._cli import init as cli_init
from agent_executor._cli import inspect as cli_inspect
from agent_executor._cli import live
from agent_executor._cli import probe as cli_probe
from agent_executor._cli import schemas as cli_schemas
from agent_executor._cli.agents import build_agent, resolve_provider
from agent_executor._cli.commands import (
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_USAGE,
    Subcommands,
    UsageError,
)
from agent_executor._cli.flags import (
    add_agent_arguments,
    add_option_arguments,
    add_run_arguments,
    add_schema_arguments,
    run_options,
)
from agent_executor._cli.inputs import caller_schema, find_agent_file, load_agent, parse_param
from agent_executor._cli.stream import run_streamed
from agent_executor._redaction import redact_json_text, redact_text

__all__ = [
    "EPILOG",
    "Registrar",
    "build_parser",
    "find_agent_file",
    "main",
    "parse_param",
    "write_result",
]


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="run an agent on a task and print its validated result")
    add_agent_arguments(run, required=False)
    run.add_argument("--task", required=True, help="the task for the agent")
    add_run_arguments(run)
    add_option_arguments(run)
    add_schema_arguments(run)
    run.add_argument(
        "--json",
        action="store_true",
        help="print the full run result as JSON (with --stream: every event as a JSON line)",
    )
    run.add_argument("--stream", action="store_true", help=STREAM_HELP)
    run.set_defaults(handler=_run)


STREAM_HELP = (
    "show the output growing as the model writes it: a contract's latest partial output (or "
    "the reply's text) redrawn in place on the terminal, one line on stderr for each tool "
    "call and retry; stdout then ends with exactly the output and exit code of a run without "
    "--stream (when stdout is not a terminal the progress goes to stderr, so a pipe gets the "
    "same bytes). With --json, stdout gets one JSON line per event instead (run_started, "
    "text_delta, tool_call_started, tool_call_finished, partial_output, retry_started), the "
    "last a run_finished line whose 'result' is the --json result; the word being written "
    "is held back until whole, so no secret shows in pieces"
)


Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]
"""Adds commands to the command line: ``register(commands)``, each sub-parser setting
``handler(args, out, err) -> int`` with ``set_defaults``."""

EPILOG = (
    "exit codes: 0 done, 1 a run failed or a check found problems, 2 bad usage or config "
    "(one 'agentshape: ...' line on stderr), 130 interrupted"
)


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose mistakes are one ``agentshape: ...`` line, not a usage block."""

    def error(self, message: str) -> NoReturn:
        """Print the mistake as one line pointing at ``--help``, and exit with code 2."""
        command = self.prog.removeprefix("agentshape").strip()
        where = f"{command}: " if command else ""
        self.exit(EXIT_USAGE, f"agentshape: {where}{message} (see '{self.prog} --help')\n")


def build_parser(extra_commands: Sequence[Registrar] = ()) -> argparse.ArgumentParser:
    """Return the ``agentshape`` argument parser.

    Args:
        extra_commands: More ``register(commands)`` functions, such as the service's ``serve``
            and ``runner`` (the layers above the executor add theirs this way).
    """
    parser = _OneLineParser(
        prog="agentshape",
        description="Run LLM agents that return data in the shape their designer asked for.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"agentshape {__version__}")
    # Subcommands are built by the parser's own class, so their mistakes are one line too.
    commands = cast(
        Subcommands, parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    )
    _add_run(commands)
    cli_batch.register(commands)
    cli_evals.register(commands)
    cli_fleet.register(commands)
    cli_inspect.register(commands)
    cli_schemas.register(commands)
    cli_analytics.register(commands)
    cli_init.register(commands)
    cli_probe.register(commands)
    for register in extra_commands:
        register(commands)
    for sub in commands.choices.values():
        if sub.epilog is None:
            sub.epilog = EPILOG
    return parser


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.agent is None:
        raise UsageError("run needs AGENT: an agent id in the agents directory, or a path")
    params = dict(parse_param(p) for p in args.param)
    options = run_options(args)
    _, config = load_agent(args.agent, args.agents_dir)
    schema = caller_schema(args, config)
    agent = build_agent(args, config)
    provider = resolve_provider(agent, args.model, err)
    request = RunRequest(
        task=_utf8_task(args.task),
        parameters=params,
        options=options,
        output_schema=schema.inline,
        schema_name=schema.name if schema.inline is None else None,
    )
    escalate = not args.no_escalate
    if args.stream:
        result = run_streamed(
            agent,
            request,
            model=provider,
            escalate=escalate,
            json_lines=args.json,
            out=out,
            err=err,
        )
        if args.json:  # the last JSON line, run_finished, holds the result
            return EXIT_OK if result.ok else EXIT_RUN_FAILED
    else:
        result = agent.run_sync(request, model=provider, escalate=escalate)
    return write_result(result.result, out, as_json=args.json)


def write_result(run: RunResult, out: TextIO, *, as_json: bool) -> int:
    """Print a run's result as ``agentshape run`` does, secrets redacted; return the exit code.

    Args:
        run: The run's result.
        out: Where it goes.
        as_json: The whole result as indented JSON, instead of the summary and the output.

    Returns:
        0 for a completed run, 1 for a failed one.
    """
    if as_json:
        text = dump_json(run.model_dump(mode="json"), indent=2)
        out.write(redact_json_text(text) + "\n")
    else:
        shown = io.StringIO()
        _print_pretty(run, shown)
        out.write(redact_text(shown.getvalue()))
    return EXIT_OK if run.ok else EXIT_RUN_FAILED


def _utf8_task(task: str) -> str:
    """Return ``--task``, refusing bytes that are not UTF-8 (passed on as surrogates)."""
    if problem := unencodable(task):
        raise UsageError(f"--task is not UTF-8 text ({problem})")
    return task


def _print_pretty(run: RunResult, out: TextIO) -> None:
    attempts = len(run.attempts)
    head = f"{run.status}: agent {run.agent_id} on {run.model}"
    if run.model_tier:
        head += f" (escalated to tier {run.model_tier})"
    head += f", {attempts} attempt{'s' if attempts != 1 else ''}"
    head += f", {run.usage.total_tokens} tokens, {run.duration_ms:.0f} ms"
    print(head, file=out)
    if run.schema_source == "named":
        print(f"schema: {run.schema_name} (from the registry)", file=out)
    elif run.schema_source == "inline":
        print("schema: the --schema-file schema", file=out)
    escalated = run.model_tier > 0 or len({attempt.model for attempt in run.attempts}) > 1
    if run.ok and run.retries:
        print(f"rescued by {run.retries} retr{'ies' if run.retries > 1 else 'y'}:", file=out)
        for attempt in run.attempts:
            if attempt.errors:
                problems = "; ".join(str(issue) for issue in attempt.errors)
                on = f" on {attempt.model}" if escalated else ""
                print(f"  attempt {attempt.number}{on} was rejected: {problems}", file=out)
    if run.recovered_by_extraction:
        print("(the JSON was recovered from the model's text)", file=out)
    if run.result_data is not None:
        print(dump_json(run.result_data, indent=2), file=out)
    elif run.result_text is not None:
        print(run.result_text, file=out)
    if run.error is not None:
        print(f"error [{run.error.type}]: {run.error.message}", file=out)
        for issue in run.error.validation_errors:
            print(f"  - {issue}", file=out)
        if run.error.last_output is not None:
            last = dump_json(run.error.last_output, indent=2)
            print(f"last output:\n{last}", file=out)


class _WarningLines(logging.Handler):
    """Print the library's logged warnings on standard error, one line each."""

    def emit(self, record: logging.LogRecord) -> None:
        """Write one warning line (standard error is looked up now, as a test replaces it)."""
        ours = record.name.split(".")[0] in _OWN_PACKAGES
        prefix = "note: " if ours else f"warning: {record.name}: "
        with live.paused():  # above a streamed run's growing output, not through it
            print(prefix + record.getMessage(), file=sys.stderr)


_OWN_PACKAGES = frozenset({"agent_contracts", "agent_core", "agent_executor", "agent_coordinator"})


def _show_library_warnings() -> None:
    """Give the root logger one warning printer (the command line is an application)."""
    root = logging.getLogger()
    if not any(isinstance(handler, _WarningLines) for handler in root.handlers):
        root.addHandler(_WarningLines(logging.WARNING))


def main(
    argv: Sequence[str] | None = None,
    *,
    out: TextIO | None = None,
    extra_commands: Sequence[Registrar] = (),
) -> int:
    """Run the ``agentshape`` command line and return its exit code.

    A reader that closes the pipe early (``agentshape list | head -1``) ends the command
    quietly, as a Unix tool does.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
        out: Where results go (default: standard output); messages go to standard error.
        extra_commands: More commands to offer (see :func:`build_parser`).

    Returns:
        0 when the command did what was asked, 1 when a run failed (or an output is invalid, a
        config has problems), 2 for bad usage or config, 130 when interrupted.
    """
    stdout = out or sys.stdout
    for stream in (stdout, sys.stderr):
        _escape_unencodable(stream)
    _show_library_warnings()
    parser = build_parser(extra_commands)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        code: int = args.handler(args, stdout, sys.stderr)
    except BrokenPipeError:  # before OSError, of which it is one: a reader closed the pipe
        _quiet_closed_pipe()
        return EXIT_OK
    except AgentshapeError as exc:
        print(f"agentshape: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"agentshape: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("agentshape: interrupted", file=sys.stderr)
        return 130
    try:
        stdout.flush()
    except BrokenPipeError:
        _quiet_closed_pipe()
    return code


def _escape_unencodable(stream: TextIO) -> None:
    """Make a real output stream write text it cannot encode as escapes instead of raising."""
    reconfigure = getattr(stream, "reconfigure", None)
    if callable(reconfigure):
        with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
            reconfigure(errors="backslashreplace")


def _quiet_closed_pipe() -> None:
    """Point stdout at devnull so the interpreter's last flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (a test's capture): nothing to redirect
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
