"""``agentshape run-many``: one agent over a JSONL file of tasks, results written as they finish.

The tasks file has one task a line: ``{"id": ..., "task": ..., "parameters": {...}}`` (``id``
and ``parameters`` optional; the id defaults to the line number), a JSON string, or plain text
(a line that does not start with ``{``, ``[`` or ``"``). Blank lines and lines starting with
``#`` are skipped. Every bad line is reported with its number before anything runs.

Each finished run appends one JSON line to ``--out`` (id, line, status, result_data or
result_text, error, usage, model, tier...). Running again skips every task whose id already has
a ``completed`` line there; failed ones run again (their old lines are dropped first, so the file
ends with one line per task).

With ``--batch`` every task's model calls go through the provider's batch API (see
:mod:`agent_executor._batching`): rows gain ``batch_id``, the batches are recorded in
``<out>.batches`` as they are created, and a rerun re-attaches to them.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, JsonValue

from agent_contracts._call_limits import CallLimits
from agent_contracts._runs import RunOptions, RunRequest
from agent_core._json_text import dump_json
from agent_core._user_files import writable_output
from agent_executor._agent import Agent
from agent_executor._batch import run_many
from agent_executor._batching import Batcher, BatchProgress
from agent_executor._call_limits import CallLimiter, LimitedProvider, LocalCallLimiter
from agent_executor._cli.agents import build_agent, resolve_provider
from agent_executor._cli.commands import EXIT_OK, EXIT_RUN_FAILED, Subcommands, UsageError
from agent_executor._cli.flags import (
    add_agent_arguments,
    add_option_arguments,
    add_run_arguments,
    add_schema_arguments,
    run_options,
)
from agent_executor._cli.inputs import CallerSchema, caller_schema, load_agent, parse_param
from agent_executor._cli.progress import Progress
from agent_executor._cli.tasks import (
    TaskItem,
    read_done,
    read_tasks,
    result_record,
    results_lock,
)
from agent_executor._providers.base import Provider
from agent_executor._providers.batches import batch_api_for
from agent_executor._redaction import redact_json_text
from agent_executor._result import AgentResult

__all__ = ["TaskItem", "read_done", "read_tasks", "register", "result_record", "run_tasks"]


def register(commands: Subcommands) -> None:
    """Add ``run-many`` to the command line."""
    many = commands.add_parser(
        "run-many",
        help="run an agent over a JSONL file of tasks, with bounded concurrency",
        description="Run an agent on every task of a JSONL file; each result is appended to "
        "--out as it finishes, and a rerun skips the tasks already completed there.",
    )
    add_agent_arguments(many)
    many.add_argument(
        "--tasks", type=Path, required=True, metavar="FILE", help="one task a line (JSONL)"
    )
    many.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="results, one JSON line a task"
    )
    many.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="runs at once (default 4)"
    )
    many.add_argument(
        "--rpm",
        type=int,
        default=None,
        metavar="N",
        help="most model calls a minute (beside the agent's llm.limits; not with --batch)",
    )
    many.add_argument(
        "--tpm",
        type=int,
        default=None,
        metavar="N",
        help="most tokens the model calls use a minute (beside llm.limits; not with --batch)",
    )
    many.add_argument(
        "--batch",
        action="store_true",
        help="send the model calls through the provider's batch API (half price, within 24 h); "
        "batches are recorded in OUT.batches so a rerun re-attaches to them",
    )
    many.add_argument(
        "--batch-poll",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="with --batch: first wait between polls of a batch, growing to 2 min (default 10)",
    )
    add_run_arguments(many)
    add_option_arguments(many)
    add_schema_arguments(many)
    # the layer above sets a limiter shared through its store (``--database``)
    many.set_defaults(handler=run_many_command, call_limiter=None)


async def run_tasks(
    agent: Agent[BaseModel],
    items: Sequence[TaskItem],
    *,
    concurrency: int,
    requests: Sequence[RunRequest],
    model: Provider,
    escalate: bool,
    sink: TextIO,
    progress: Progress,
    batcher: Batcher | None = None,
) -> Counter[str]:
    """Run every request with the library's ``run_many``, writing each result as it finishes.

    Args:
        agent: The agent.
        items: The tasks, one per request (for their ids and lines).
        concurrency: Most runs in flight at once.
        requests: One request per task.
        model: The provider every run uses.
        escalate: Escalate a contract failure to the agent's next model tier.
        sink: Where each result's line (:func:`result_record`) is written and flushed.
        progress: Advanced once per finished task.
        batcher: Send the model calls through this batcher's batches (each line then has
            ``batch_id``: the last batch its task went through).

    Returns:
        The failed tasks, counted by error type.

    Raises:
        ConfigError: A run's request is invalid (the other runs are cancelled).
    """
    failures: Counter[str] = Counter()

    def written(index: int, outcome: AgentResult[BaseModel]) -> None:
        result = outcome.result
        record = result_record(items[index], result)
        if batcher is not None:
            batch_ids = batcher.batch_ids.get(items[index].key)
            record["batch_id"] = batch_ids[-1] if batch_ids else None
        sink.write(redact_json_text(dump_json(record)) + "\n")
        sink.flush()
        if result.error is not None:
            failures[result.error.type] += 1
        progress.advance(failed=not result.ok)

    await run_many(
        agent,
        requests,
        concurrency=concurrency,
        on_result=written,
        model=model,
        escalate=escalate,
        batch=batcher or False,
        keys=[item.key for item in items] if batcher is not None else None,
    )
    return failures


def run_many_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``agentshape run-many``: exit 0 when every task completed, 1 when any failed.

    Raises:
        UsageError: A flag, the tasks file or the results file cannot be used (nothing runs).
        ConfigError: The agent, its model or the schema cannot be used.
    """
    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {args.concurrency}")
    for flag, value in (("--rpm", args.rpm), ("--tpm", args.tpm)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1, got {value}")
    if args.batch_poll < 0:
        raise UsageError(f"--batch-poll must be 0 or more seconds, got {args.batch_poll}")
    if args.out.resolve() == args.tasks.resolve() or _same_file(args.out, args.tasks):
        raise UsageError("--out must not be the tasks file")
    problem = writable_output(args.out)
    if problem:
        raise UsageError(f"--out {args.out} {problem}; give a results file of its own")
    shared = dict(parse_param(p) for p in args.param)
    options = run_options(args)
    _, config = load_agent(args.agent, args.agents_dir)
    schema = caller_schema(args, config)
    items = read_tasks(args.tasks)
    agent = build_agent(args, config)
    provider = resolve_provider(agent, args.model, err)
    limits = agent.call_limits.tightest(
        CallLimits(
            concurrency=args.concurrency,
            requests_per_minute=args.rpm,
            tokens_per_minute=args.tpm,
        )
    )
    if not args.batch:  # a batch is one call whatever its size: the limits are for live calls
        limiter: CallLimiter = args.call_limiter or LocalCallLimiter()
        provider = LimitedProvider(provider, limiter, limits)
    with results_lock(args.out):
        return _run_batch(args, out, err, items, agent, provider, shared, options, schema)


def _run_batch(
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    items: list[TaskItem],
    agent: Agent[BaseModel],
    provider: Provider,
    shared: dict[str, JsonValue],
    options: RunOptions,
    schema: CallerSchema,
) -> int:
    """Run the batch while holding the results file's lock; the summary goes to ``out``."""
    done, dropped = read_done(args.out, items)
    pending = [item for item in items if item.key not in done]
    skipped = len(items) - len(pending)
    if skipped:
        print(f"skipping {skipped} task(s) already completed in {args.out}", file=err)
    if dropped:
        print(f"dropped {dropped} earlier line(s) of tasks that run again", file=err)
    progress = Progress(len(pending), err)
    progress.start()
    failures: Counter[str] = Counter()
    requests = [
        RunRequest(
            task=item.task,
            parameters={**shared, **item.parameters},
            options=options,
            output_schema=schema.inline,
            schema_name=schema.name if schema.inline is None else None,
        )
        for item in pending
    ]
    batcher = _batcher(args, provider, err) if args.batch and pending else None
    if pending:
        with args.out.open("a", encoding="utf-8", errors="backslashreplace") as sink:
            failures = asyncio.run(
                run_tasks(
                    agent,
                    pending,
                    concurrency=args.concurrency,
                    requests=requests,
                    model=provider,
                    escalate=not args.no_escalate,
                    sink=sink,
                    progress=progress,
                    batcher=batcher,
                )
            )
    failed = sum(failures.values())
    completed = len(pending) - failed
    summary = f"{len(items)} task(s): {completed} completed, {failed} failed"
    if failures:
        summary += " (" + ", ".join(f"{n} {kind}" for kind, n in failures.most_common()) + ")"
    if skipped:
        summary += f", {skipped} skipped (completed earlier)"
    if batcher is not None:
        summary += f"; {batcher.rounds} batch round(s)"
    print(f"{summary}; results in {args.out}", file=out)
    return EXIT_RUN_FAILED if failed else EXIT_OK


def _batcher(args: argparse.Namespace, provider: Provider, err: TextIO) -> Batcher:
    """Return the batcher of ``--batch``: its state beside ``--out``, its progress on ``err``."""

    def show(progress: BatchProgress) -> None:
        status = progress.status
        ended = status.succeeded + status.failed
        line = f"batch {progress.batch_id} (round {progress.round}): {ended}/{status.total} done"
        if status.failed:
            line += f", {status.failed} failed"
        print(line + (", ended" if status.ended else ""), file=err, flush=True)

    return Batcher(
        batch_api_for(provider),
        provider,
        state_path=args.out.with_name(args.out.name + ".batches"),
        poll_interval_s=args.batch_poll,
        max_poll_interval_s=max(args.batch_poll, 120.0),
        on_progress=show,
    )


def _same_file(left: Path, right: Path) -> bool:
    """Whether two paths name one file (a hard link, a bind mount), when both exist."""
    try:
        return left.samefile(right)
    except OSError:
        return False
