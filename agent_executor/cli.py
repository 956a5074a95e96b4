"""The ``agentshape`` command line: the only place that prints and picks exit codes.

Exit codes: 0 the run completed, 1 the run failed, 2 bad usage or config.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, JsonValue, ValidationError

from agent_contracts.errors import AgentshapeError
from agent_contracts.runs import RunOptions
from agent_executor.agent import Agent, AgentResult
from agent_executor.analytics import JsonlAnalytics

__all__ = ["find_agent_file", "main", "parse_param"]

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_USAGE = 2


class _UsageError(AgentshapeError):
    """A command line that cannot be carried out."""


def parse_param(text: str) -> tuple[str, JsonValue]:
    """Parse ``key=value``; the value is read as JSON when it parses, else kept as a string.

    Raises:
        AgentshapeError: There is no ``=`` or the key is empty.
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise _UsageError(f"--param expects key=value, got {text!r}")
    try:
        value: JsonValue = json.loads(raw)
    except ValueError:
        value = raw
    return key.strip(), value


def find_agent_file(agent: str, agents_dir: Path) -> Path:
    """Return the ``agent.yml`` for an agent id in ``agents_dir`` or a path to a file.

    Raises:
        AgentshapeError: Neither exists; the message lists the ids that do.
    """
    path = Path(agent)
    if path.is_file():
        return path
    if path.is_dir() and (path / "agent.yml").is_file():
        return path / "agent.yml"
    candidate = agents_dir / agent / "agent.yml"
    if candidate.is_file():
        return candidate
    known = sorted(p.parent.name for p in agents_dir.glob("*/agent.yml"))
    listing = ", ".join(known) if known else "none"
    raise _UsageError(
        f"no agent {agent!r}: not a file, and no {candidate} (agents in {agents_dir}: {listing})"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentshape",
        description="Run LLM agents that return data in the shape their designer asked for.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run an agent on a task and print its validated result")
    run.add_argument("agent", help="an agent id in the agents directory, or a path to agent.yml")
    run.add_argument("--task", required=True, help="the task for the agent")
    run.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="a run parameter (repeatable)"
    )
    run.add_argument(
        "--model",
        help="openai:MODEL, anthropic:MODEL, ollama:MODEL or test (default: the agent's model, "
        "else from OPENAI_API_KEY / ANTHROPIC_API_KEY, else the offline test model)",
    )
    run.add_argument("--workspace", type=Path, help="directory the input tools may read")
    run.add_argument("--agents-dir", type=Path, default=Path("agents"), help="default: ./agents")
    run.add_argument("--json", action="store_true", help="print the full run result as JSON")
    run.add_argument("--max-retries", type=int, help="re-prompts after a failed attempt")
    run.add_argument(
        "--mode", choices=["tool", "native", "prompted"], help="how the output is asked for"
    )
    run.add_argument(
        "--analytics-dir", type=Path, help="where run events go (default .agentshape/analytics)"
    )
    return parser


_FLAGS = {"max_retries": "--max-retries", "output_mode": "--mode"}


def _options(args: argparse.Namespace) -> RunOptions:
    """Return the run options the flags set.

    Raises:
        AgentshapeError: A flag's value is out of range.
    """
    values: dict[str, object] = {}
    if args.max_retries is not None:
        values["max_retries"] = args.max_retries
    if args.mode is not None:
        values["output_mode"] = args.mode
    try:
        return RunOptions.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{_FLAGS.get(str(e['loc'][0]), e['loc'][0])}: {e['msg']}" for e in exc.errors()
        )
        raise _UsageError(problems) from exc


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    params = dict(parse_param(p) for p in args.param)
    options = _options(args)
    path = find_agent_file(args.agent, args.agents_dir)
    kwargs: dict[str, object] = {}
    if args.analytics_dir is not None:
        kwargs["analytics"] = JsonlAnalytics(args.analytics_dir)
    agent = Agent.from_yaml(path, workspace=args.workspace, **kwargs)
    provider = agent.provider(args.model)
    if provider.name == "test":
        if args.model or agent.config.model:
            why = "as asked"
        else:
            why = "no API key set and no --model given"
        print(
            f"note: using the offline test model ({why}); its answers are generated from the "
            "schema, not by a language model. Set OPENAI_API_KEY or ANTHROPIC_API_KEY, or pass "
            "--model openai:gpt-4.1-mini, to use a real model.",
            file=err,
        )
    result = agent.run_sync(args.task, parameters=params, options=options, model=provider)
    if args.json:
        out.write(result.result.model_dump_json(indent=2) + "\n")
    else:
        _print_pretty(result, out)
    return EXIT_OK if result.ok else EXIT_RUN_FAILED


def _print_pretty(result: AgentResult[BaseModel], out: TextIO) -> None:
    run = result.result
    attempts = len(run.attempts)
    head = f"{run.status}: agent {run.agent_id} on {run.model}"
    head += f", {attempts} attempt{'s' if attempts != 1 else ''}"
    head += f", {run.usage.total_tokens} tokens, {run.duration_ms:.0f} ms"
    print(head, file=out)
    if run.ok and run.retries:
        print(f"rescued by {run.retries} retr{'ies' if run.retries > 1 else 'y'}:", file=out)
        for attempt in run.attempts:
            if attempt.errors:
                problems = "; ".join(str(issue) for issue in attempt.errors)
                print(f"  attempt {attempt.number} was rejected: {problems}", file=out)
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
        0 when the run completed, 1 when it failed, 2 for bad usage or config.
    """
    stdout = out or sys.stdout
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if args.command == "run":
            return _run(args, stdout, sys.stderr)
    except AgentshapeError as exc:
        print(f"agentshape: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("agentshape: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
