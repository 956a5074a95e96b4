"""``agentshape run-many``: one agent over a JSONL file of tasks, results written as they finish.

The tasks file has one task a line: ``{"id": ..., "task": ..., "parameters": {...}}`` (``id``
and ``parameters`` optional; the id defaults to the line number), a JSON string, or plain text
(a line that does not start with ``{``, ``[`` or ``"``). Blank lines and lines starting with
``#`` are skipped. Every bad line is reported with its number before anything runs.

Each finished run appends one JSON line to ``--out`` (id, line, status, result_data or
result_text, error, usage, model, tier...). Running again skips every task whose id already has
a ``completed`` line there; failed ones run again (their old lines are dropped first, so the file
ends with one line per task).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from agent_contracts.runs import RunRequest, RunResult
from agent_core.registry import DEFAULT_REGISTRY_PATH, SchemaRegistry
from agent_executor.agent import ENV_ANALYTICS_DIR, Agent
from agent_executor.analytics import DEFAULT_ANALYTICS_DIR, JsonlAnalytics
from agent_executor.batch import run_many
from agent_executor.cli.inputs import (
    EXIT_OK,
    EXIT_RUN_FAILED,
    Subcommands,
    UsageError,
    add_agent_arguments,
    add_run_arguments,
    add_schema_arguments,
    caller_schema,
    load_agent,
    parse_param,
    profile_overrides,
    resolve_provider,
    run_options,
)
from agent_executor.cli.progress import Progress
from agent_executor.providers.base import Provider
from agent_executor.result import AgentResult

__all__ = ["TaskItem", "read_done", "read_tasks", "register", "result_record", "run_tasks"]

_MAX_REPORTED = 20


@dataclass(frozen=True)
class TaskItem:
    """One task of the batch.

    Attributes:
        id: The task's id (the line number when the line gave none).
        line: The line of the tasks file it came from.
        task: The task text.
        parameters: The run parameters.
    """

    id: str | int
    line: int
    task: str
    parameters: dict[str, JsonValue]

    @property
    def key(self) -> str:
        """The id as text, the way results are matched to tasks."""
        return str(self.id)


class _TaskLine(BaseModel):
    """A task line written as a JSON object."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str | int | None = None
    """The task's id."""
    task: str = Field(min_length=1)
    """The task text."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """The run parameters."""


def _line_problem(number: int, text: str) -> tuple[TaskItem | None, str | None]:
    """Read one line: the task, or what is wrong with it (``(None, None)`` for a blank line)."""
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None, None
    if not stripped.startswith(("{", "[", '"')):
        return TaskItem(id=number, line=number, task=stripped, parameters={}), None
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} (column {exc.colno})"
    if isinstance(value, str):
        if not value.strip():
            return None, "the task is an empty string"
        return TaskItem(id=number, line=number, task=value, parameters={}), None
    if not isinstance(value, dict):
        return None, "a task line is a JSON object, a JSON string or plain text, not an array"
    try:
        parsed = _TaskLine.model_validate(value)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"][:1]) or "line"
            message = error["msg"]
            if error["type"] == "extra_forbidden":
                message = "unknown key (a task line has id, task and parameters)"
            elif field == "id":
                message = "must be a string or an integer"
            problems.append(f"{field}: {message}")
        return None, "; ".join(dict.fromkeys(problems))
    item_id = parsed.id if parsed.id is not None else number
    return TaskItem(id=item_id, line=number, task=parsed.task, parameters=parsed.parameters), None


def read_tasks(path: Path) -> list[TaskItem]:
    """Read a tasks file.

    Args:
        path: The JSONL file.

    Returns:
        The tasks, in file order.

    Raises:
        UsageError: The file cannot be read, or lines are bad (every one is listed, with its
            number, up to twenty), or two tasks share an id.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"tasks file {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"tasks file {path} is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"tasks file {path} is not UTF-8 text (at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read tasks file {path}: {exc.strerror or exc}") from None
    items: list[TaskItem] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    # Split on newlines only: a JSON string may hold U+2028 and other characters that
    # str.splitlines() would break a line at.
    for number, line in enumerate(text.split("\n"), start=1):
        item, problem = _line_problem(number, line)
        if problem is not None:
            problems.append(f"{path}:{number}: {problem}")
        if item is None:
            continue
        if item.key in seen:
            problems.append(
                f"{path}:{number}: id {item.id!r} is already the id of line {seen[item.key]}"
            )
            continue
        seen[item.key] = number
        items.append(item)
    if problems:
        shown = problems[:_MAX_REPORTED]
        if len(problems) > _MAX_REPORTED:
            shown.append(f"... and {len(problems) - _MAX_REPORTED} more bad lines")
        count = f"{len(problems)} bad line{'s' if len(problems) != 1 else ''}"
        raise UsageError(f"{path} has {count}; nothing was run:\n" + "\n".join(shown))
    return items


def read_done(out: Path, pending: Sequence[TaskItem]) -> tuple[set[str], int]:
    """Find the tasks an earlier run already completed, and tidy the results file for a rerun.

    Lines of tasks about to run again (not completed) and a torn last line (no newline, not
    JSON: the earlier run was stopped mid-write) are dropped; every other line is kept as it is.

    Args:
        out: The results file (it may not exist yet).
        pending: The tasks of this batch.

    Returns:
        The ids (as text) with a ``completed`` line, and how many lines were dropped.

    Raises:
        UsageError: The file is not UTF-8 text.
        OSError: The file cannot be read or rewritten.
    """
    if not out.exists():
        return set(), 0
    try:
        lines = out.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"--out {out} is not UTF-8 text (at byte {exc.start}), so not a results file of "
            "agentshape; move it aside or name another file"
        ) from None
    tail = lines.pop()  # what follows the last newline: "" unless the last line has none
    entries = [(line, _record_of(line)) for line in lines if line.strip()]
    torn = False
    if tail.strip():
        record = _record_of(tail)
        torn = record is None
        if record is not None:
            entries.append((tail, record))
    done = {
        str(record["id"])
        for _, record in entries
        if record is not None and "id" in record and record.get("status") == "completed"
    }
    rerun = {item.key for item in pending} - done
    kept = [
        line
        for line, record in entries
        if record is None or "id" not in record or str(record["id"]) not in rerun
    ]
    dropped = len(entries) - len(kept) + int(torn)
    if dropped or tail.strip():
        _replace(out, "".join(f"{line}\n" for line in kept))
    return done, dropped


def _record_of(line: str) -> Mapping[str, object] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file, then a rename)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def result_record(item: TaskItem, result: RunResult) -> dict[str, JsonValue]:
    """Return the results-file line for one finished task.

    Args:
        item: The task.
        result: Its run's result.

    Returns:
        id, line, status, result_data, result_text, error, usage, model, model_tier, attempts,
        retries, duration_ms, run_id, schema_source, schema_name and recovered_by_extraction.
    """
    return {
        "id": item.id,
        "line": item.line,
        "status": result.status,
        "result_data": result.result_data,
        "result_text": result.result_text,
        "error": result.error.model_dump(mode="json") if result.error else None,
        "usage": result.usage.model_dump(mode="json"),
        "model": result.model,
        "model_tier": result.model_tier,
        "attempts": len(result.attempts),
        "retries": result.retries,
        "duration_ms": round(result.duration_ms, 1),
        "run_id": result.run_id,
        "schema_source": result.schema_source,
        "schema_name": result.schema_name,
        "recovered_by_extraction": result.recovered_by_extraction,
    }


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
    add_run_arguments(many)
    add_schema_arguments(many)
    many.set_defaults(handler=run_many_command)


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

    Returns:
        The failed tasks, counted by error type.

    Raises:
        ConfigError: A run's request is invalid (the other runs are cancelled).
    """
    failures: Counter[str] = Counter()

    def written(index: int, outcome: AgentResult[BaseModel]) -> None:
        result = outcome.result
        sink.write(json.dumps(result_record(items[index], result), ensure_ascii=False) + "\n")
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
    if args.out.resolve() == args.tasks.resolve():
        raise UsageError("--out must not be the tasks file")
    if args.out.is_dir():
        raise UsageError(f"--out {args.out} is a directory; give a file")
    shared = dict(parse_param(p) for p in args.param)
    options = run_options(args)
    _, config = load_agent(args.agent, args.agents_dir)
    schema = caller_schema(args, config)
    items = read_tasks(args.tasks)
    analytics = JsonlAnalytics(
        args.analytics_dir or os.environ.get(ENV_ANALYTICS_DIR) or DEFAULT_ANALYTICS_DIR
    )
    agent: Agent[BaseModel] = Agent(
        config,
        workspace=args.workspace,
        analytics=analytics,
        registry=SchemaRegistry(getattr(args, "registry", DEFAULT_REGISTRY_PATH)),
        profile=profile_overrides(args),
    )
    provider = resolve_provider(agent, args.model, err)
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
    if pending:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a", encoding="utf-8") as sink:
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
                )
            )
    failed = sum(failures.values())
    completed = len(pending) - failed
    summary = f"{len(items)} task(s): {completed} completed, {failed} failed"
    if failures:
        summary += " (" + ", ".join(f"{n} {kind}" for kind, n in failures.most_common()) + ")"
    if skipped:
        summary += f", {skipped} skipped (completed earlier)"
    print(f"{summary}; results in {args.out}", file=out)
    return EXIT_RUN_FAILED if failed else EXIT_OK
