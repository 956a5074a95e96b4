"""The ``agentshape`` command line: the only place that prints and picks exit codes.

Commands: ``run``, ``run-many``, ``list``, ``show``, ``validate``, ``codegen``, ``schemas`` and
``analytics``. This module builds the parser, runs ``run`` itself and dispatches the others to
their modules (``cli_batch``, ``cli_fleet``, ``cli_inspect``, ``cli_schemas``,
``cli_analytics``).

Exit codes: 0 done (the run completed, the output is valid), 1 a run failed (or an output is
invalid, a config has problems), 2 bad usage or config. A mistake on the command line is one
``agentshape: ...`` line on standard error, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from pydantic import BaseModel

from agent_contracts.errors import AgentshapeError
from agent_contracts.runs import RunRequest
from agent_core.registry import DEFAULT_REGISTRY_PATH, SchemaRegistry
from agent_executor import cli_analytics, cli_batch, cli_fleet, cli_inspect, cli_schemas
from agent_executor.agent import Agent
from agent_executor.analytics import DEFAULT_ANALYTICS_DIR, JsonlAnalytics
from agent_executor.cli_inputs import (
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_USAGE,
    add_agent_arguments,
    add_run_arguments,
    add_schema_arguments,
    caller_schema,
    find_agent_file,
    load_agent,
    parse_param,
    profile_overrides,
    resolve_provider,
    run_options,
)
from agent_executor.result import AgentResult

__all__ = ["find_agent_file", "main", "parse_param"]


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="run an agent on a task and print its validated result")
    add_agent_arguments(run)
    run.add_argument("--task", required=True, help="the task for the agent")
    add_run_arguments(run)
    add_schema_arguments(run)
    run.add_argument("--json", action="store_true", help="print the full run result as JSON")
    run.set_defaults(handler=_run)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentshape",
        description="Run LLM agents that return data in the shape their designer asked for.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(commands)
    cli_batch.register(commands)
    cli_fleet.register(commands)
    cli_inspect.register(commands)
    cli_schemas.register(commands)
    cli_analytics.register(commands)
    return parser


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    params = dict(parse_param(p) for p in args.param)
    options = run_options(args)
    _, config = load_agent(args.agent, args.agents_dir)
    schema = caller_schema(args, config)
    analytics = JsonlAnalytics(args.analytics_dir or DEFAULT_ANALYTICS_DIR)
    agent: Agent[BaseModel] = Agent(
        config,
        workspace=args.workspace,
        analytics=analytics,
        registry=SchemaRegistry(getattr(args, "registry", DEFAULT_REGISTRY_PATH)),
        profile=profile_overrides(args),
    )
    provider = resolve_provider(agent, args.model, err)
    result = agent.run_sync(
        RunRequest(
            task=args.task,
            parameters=params,
            options=options,
            output_schema=schema.inline,
            schema_name=schema.name if schema.inline is None else None,
        ),
        model=provider,
        escalate=not args.no_escalate,
    )
    if args.json:
        out.write(result.result.model_dump_json(indent=2) + "\n")
    else:
        _print_pretty(result, out)
    return EXIT_OK if result.ok else EXIT_RUN_FAILED


def _print_pretty(result: AgentResult[BaseModel], out: TextIO) -> None:
    run = result.result
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
        print(json.dumps(run.result_data, indent=2, ensure_ascii=False), file=out)
    elif run.result_text is not None:
        print(run.result_text, file=out)
    if run.error is not None:
        print(f"error [{run.error.type}]: {run.error.message}", file=out)
        for issue in run.error.validation_errors:
            print(f"  - {issue}", file=out)
        if run.error.last_output is not None:
            last = json.dumps(run.error.last_output, indent=2, ensure_ascii=False)
            print(f"last output:\n{last}", file=out)


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the ``agentshape`` command line and return its exit code.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
        out: Where results go (default: standard output); messages go to standard error.

    Returns:
        0 when the command did what was asked, 1 when a run failed (or an output is invalid, a
        config has problems), 2 for bad usage or config, 130 when interrupted.
    """
    stdout = out or sys.stdout
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        code: int = args.handler(args, stdout, sys.stderr)
    except AgentshapeError as exc:
        print(f"agentshape: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"agentshape: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("agentshape: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
