"""``agentshape eval``: which model meets an agent's contract, and at what cost.

The tasks run on each model of ``--models`` as ``run-many`` runs them (same tasks file, same
results lines, resumable the same way), one results file a model in ``--out``; then each
model's results file is read back and folded into its figures (:mod:`agent_executor._evals`),
printed as a table or, with ``--json``, as one JSON object, and written to ``eval.json`` in
``--out`` (an :class:`~agent_executor._evals.EvalReport`, which ``agentshape serve
--evals-dir`` shows on the dashboard).

The expected-outputs file (``--expected``) is JSONL, one ``{"id": ..., "expected": ...}`` a
line, the id naming a task of the tasks file; blank lines and lines starting with ``#`` are
skipped, and every bad line is reported with its number before anything runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from agent_contracts._errors import ConfigFileError
from agent_contracts._runs import RunRequest
from agent_contracts._suggest import did_you_mean
from agent_core._json_text import dump_json, parse_json
from agent_core._user_files import MAX_DATA_BYTES, read_user_file, writable_output
from agent_executor._cli.agents import build_agent, resolve_provider
from agent_executor._cli.batch import run_tasks
from agent_executor._cli.commands import EXIT_OK, EXIT_RUN_FAILED, Subcommands, UsageError
from agent_executor._cli.flags import (
    add_agent_arguments,
    add_option_arguments,
    add_schema_arguments,
    run_options,
)
from agent_executor._cli.inputs import caller_schema, load_agent, parse_param
from agent_executor._cli.progress import Progress
from agent_executor._cli.table import format_table
from agent_executor._cli.tasks import TaskItem, read_done, read_tasks, results_lock
from agent_executor._evals import (
    EVAL_REPORT_FILE,
    EvalReport,
    EvalRun,
    ModelEval,
    Price,
    evaluate_model,
)

__all__ = ["read_expected", "read_runs", "register", "results_file_name"]

_MAX_REPORTED = 20
_OPTION = re.compile(r"[a-z_]+=")
_PRICE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*/\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*")


def register(commands: Subcommands) -> None:
    """Add ``eval`` to the command line."""
    command = commands.add_parser(
        "eval",
        help="run an agent's tasks on several models and compare how they meet its contract",
        description="Run every task of a JSONL file on each model (as run-many does, one "
        "results file a model in --out, resumable), then print per model: contract success, "
        "first-try validity, runs rescued by the re-ask, mean attempts, tokens, latency "
        "p50/p95, cost (with --price) and field-level agreement (with --expected).",
    )
    add_agent_arguments(command)
    command.add_argument(
        "--tasks", type=Path, required=True, metavar="FILE", help="one task a line (JSONL)"
    )
    command.add_argument(
        "--models",
        required=True,
        metavar="M1,M2,...",
        help="the models to compare, comma-separated (openai:MODEL, llamacpp:MODEL, test...)",
    )
    command.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="directory of the results files, one MODEL.jsonl a model; a rerun skips the "
        "tasks already completed there",
    )
    command.add_argument(
        "--expected",
        type=Path,
        metavar="FILE",
        help='expected outputs, one {"id": TASK_ID, "expected": OUTPUT} a line (JSONL), for '
        "field-level agreement",
    )
    command.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN/OUT",
        help="a model's price in dollars per million input/output tokens, such as "
        "openai:gpt-4.1-mini=0.4/1.6 (repeatable)",
    )
    command.add_argument("--json", action="store_true", help="print the figures as JSON")
    command.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="runs at once (default 4)"
    )
    command.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="a run parameter (repeatable)"
    )
    command.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a provider-profile field for every model (repeatable)",
    )
    command.add_argument("--workspace", type=Path, help="directory the input tools may read")
    command.add_argument(
        "--analytics-dir",
        type=Path,
        help="where run events go as JSONL (default $AGENTSHAPE_ANALYTICS_DIR, else "
        ".agentshape/analytics)",
    )
    add_option_arguments(command)
    add_schema_arguments(command)
    # Child sessions of an agent run on their own model, else on the run's (see build_agent).
    command.set_defaults(handler=eval_command, model=None)


def eval_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``agentshape eval``: exit 0 when every task met the contract on every model, else 1."""
    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {args.concurrency}")
    models = _models(args.models)
    prices = _prices(args.price, models)
    files = {model: args.out / results_file_name(model) for model in models}
    _check_names(files)
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is a file; give a directory for the results files")
    inputs = [path for path in (args.tasks, args.expected) if path is not None]
    for path in files.values():
        _check_results_file(path, inputs)
    shared = dict(parse_param(p) for p in args.param)
    options = run_options(args)
    _, config = load_agent(args.agent, args.agents_dir)
    schema = caller_schema(args, config)
    items = read_tasks(args.tasks)
    expected = None if args.expected is None else read_expected(args.expected, items)
    for path in files.values():
        read_runs(path, items)  # a foreign line in any results file stops the eval before it runs
    agent = build_agent(args, config)
    # Every model is resolved before any runs, so a typo in the last one costs nothing.
    providers = {model: resolve_provider(agent, model, err) for model in models}
    requests = {
        item.key: RunRequest(
            task=item.task,
            parameters={**shared, **item.parameters},
            options=options,
            output_schema=schema.inline,
            schema_name=schema.name if schema.inline is None else None,
        )
        for item in items
    }
    evals: list[tuple[ModelEval, Path]] = []
    for model in models:
        path = files[model]
        with results_lock(path):
            done, _ = read_done(path, items)
            pending = [item for item in items if item.key not in done]
            print(
                f"{model}: {len(pending)} task(s) to run, {len(items) - len(pending)} "
                f"completed earlier in {path}",
                file=err,
            )
            if pending:
                progress = Progress(len(pending), err)
                progress.start()
                with path.open("a", encoding="utf-8", errors="backslashreplace") as sink:
                    asyncio.run(
                        run_tasks(
                            agent,
                            pending,
                            concurrency=args.concurrency,
                            requests=[requests[item.key] for item in pending],
                            model=providers[model],
                            escalate=False,  # an eval measures this model, not its fallbacks
                            sink=sink,
                            progress=progress,
                        )
                    )
            runs = read_runs(path, items)
        figures = evaluate_model(
            model, runs, tasks=len(items), price=prices.get(model), expected=expected
        )
        evals.append((figures, path))
    _write_report(
        args.out / EVAL_REPORT_FILE,
        EvalReport(
            agent=config.id,
            tasks=len(items),
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
            models=[figures for figures, _ in evals],
        ),
    )
    if args.json:
        report = {
            "agent": config.id,
            "tasks": len(items),
            "models": [
                {**figures.model_dump(mode="json"), "results_file": str(path)}
                for figures, path in evals
            ],
        }
        print(dump_json(report), file=out)
    else:
        print(_table([figures for figures, _ in evals]), file=out)
    every_task_met = all(figures.completed == len(items) for figures, _ in evals)
    return EXIT_OK if every_task_met else EXIT_RUN_FAILED


def _write_report(path: Path, report: EvalReport) -> None:
    """Write the eval's report beside its results files, whole or not at all."""
    # agentshape serve --evals-dir reads these files while evals may write them: written to a
    # temporary name, then renamed over the old one.
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    partial.replace(path)


def results_file_name(model: str) -> str:
    """Return the results file's name for ``model``: its spec made safe as a file name."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", model).lstrip(".") + ".jsonl"


class _ExpectedLine(BaseModel):
    """A line of the expected-outputs file."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str | int
    """The task's id."""
    expected: JsonValue
    """The task's expected output."""


def read_expected(path: Path, items: Sequence[TaskItem]) -> dict[str, JsonValue]:
    """Read an expected-outputs file."""
    text = _read_text(path, "expected-outputs file")
    tasks = {item.key for item in items}
    expected: dict[str, JsonValue] = {}
    lines: dict[str, int] = {}
    problems: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        problem, parsed = _expected_line(stripped, number)
        if parsed is not None:
            key = str(parsed.id)
            if key in lines:
                problem = f"id {parsed.id!r} is already the id of line {lines[key]}"
            elif key not in tasks:
                problem = f"id {parsed.id!r} is not the id of a task in the tasks file"
            else:
                lines[key] = number
                expected[key] = parsed.expected
        if problem is not None:
            problems.append(f"{path}:{number}: {problem}")
    _raise_problems(path, problems)
    return expected


class _ResultLine(BaseModel):
    """What an eval reads of a results line (``run-many``'s line; other keys are ignored)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: str | int
    status: str
    result_data: JsonValue = None
    error: dict[str, JsonValue] | None = None
    usage: dict[str, JsonValue]
    attempts: int
    retries: int
    duration_ms: float | int


def read_runs(path: Path, items: Sequence[TaskItem]) -> list[EvalRun]:
    """Read the runs of the eval's tasks from a results file (the last line of a task wins)."""
    # A torn last line (no newline, not JSON: a run stopped mid-write) is skipped; the next run
    # drops it and runs that task again.
    if not path.exists():
        return []
    text = _read_text(path, "results file")
    tasks = {item.key for item in items}
    found: dict[str, EvalRun] = {}
    problems: list[str] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip() or (number == len(lines) and _torn(line)):
            continue
        try:
            record = _ResultLine.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            what = f"{where}: {first['msg']}" if where else first["msg"]
            problems.append(f"{path}:{number}: not a results line of agentshape ({what})")
            continue
        key = str(record.id)
        if key in tasks:
            found[key] = _run_of(key, record)
    _raise_problems(path, problems)
    return [found[item.key] for item in items if item.key in found]


def _torn(line: str) -> bool:
    """Whether a last line without a newline is cut short (not JSON at all)."""
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return True
    return False


def _run_of(key: str, record: _ResultLine) -> EvalRun:
    error_type = record.error.get("type") if record.error else None
    return EvalRun(
        task_id=key,
        completed=record.status == "completed",
        retries=record.retries,
        attempts=record.attempts,
        input_tokens=_count(record.usage.get("input_tokens")),
        output_tokens=_count(record.usage.get("output_tokens")),
        duration_ms=float(record.duration_ms),
        output=record.result_data,
        error_type=error_type if isinstance(error_type, str) else None,
    )


def _count(value: JsonValue) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _expected_line(text: str, number: int) -> tuple[str | None, _ExpectedLine | None]:
    """Read one expected-outputs line: ``(problem, None)`` or ``(None, line)``."""
    try:
        value = parse_json(text, source="", line=number)
    except ConfigFileError as exc:
        return exc.message, None
    if not isinstance(value, dict):
        return 'a line is a JSON object: {"id": TASK_ID, "expected": OUTPUT}', None
    try:
        return None, _ExpectedLine.model_validate(value)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "line"
            message = error["msg"]
            if error["type"] == "extra_forbidden":
                hint = did_you_mean(field, ("id", "expected"))
                message = f"unknown key{hint} (a line has id and expected)"
            elif error["type"] == "missing":
                message = "missing"
            elif field == "id":
                message = "must be a string or an integer"
            problems.append(f"{field}: {message}")
        return "; ".join(dict.fromkeys(problems)), None


def _read_text(path: Path, what: str) -> str:
    """Return a UTF-8 file's text."""
    try:
        return read_user_file(path, max_bytes=MAX_DATA_BYTES).decode("utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path} is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path} is not UTF-8 text (at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _raise_problems(path: Path, problems: list[str]) -> None:
    """Raise one error listing ``problems`` (up to twenty), if there are any."""
    if not problems:
        return
    shown = problems[:_MAX_REPORTED]
    if len(problems) > _MAX_REPORTED:
        shown.append(f"... and {len(problems) - _MAX_REPORTED} more bad lines")
    count = f"{len(problems)} bad line{'s' if len(problems) != 1 else ''}"
    raise UsageError(f"{path} has {count}; nothing was evaluated:\n" + "\n".join(shown))


def _models(text: str) -> list[str]:
    """Return the models of ``--models``."""
    # A key=value piece (a test model option, as in test:seed=1,fail_first=text) belongs to the
    # model before it.
    models: list[str] = []
    for piece in (piece.strip() for piece in text.split(",")):
        # The test model's options are joined by commas too (test:seed=1,fail_first=text).
        if models and models[-1] and _OPTION.match(piece):
            models[-1] += f",{piece}"
        else:
            models.append(piece)
    if not all(models):
        raise UsageError(f"--models takes models separated by commas, got {text!r}")
    twice = sorted({model for model in models if models.count(model) > 1})
    if twice:
        raise UsageError(f"--models names {', '.join(twice)} more than once")
    return models


def _prices(values: Sequence[str], models: Sequence[str]) -> dict[str, Price]:
    """Return the prices of ``--price MODEL=IN/OUT``, by model."""
    prices: dict[str, Price] = {}
    for value in values:
        model, equals, amounts = value.rpartition("=")
        model = model.strip()
        match = _PRICE.fullmatch(amounts)
        if not equals or not model or match is None:
            raise UsageError(
                f"--price takes MODEL=IN/OUT in dollars per million tokens, such as "
                f"openai:gpt-4.1-mini=0.4/1.6; got {value!r}"
            )
        if model not in models:
            hint = did_you_mean(model, models)
            raise UsageError(f"--price {value!r}: {model!r} is not one of --models{hint}")
        if model in prices:
            raise UsageError(f"--price gives {model!r} a price twice")
        prices[model] = Price(float(match.group(1)), float(match.group(2)))
    return prices


def _check_results_file(path: Path, inputs: Sequence[Path]) -> None:
    """Refuse a results file that is an input file or cannot be appended to as one."""
    for given in inputs:
        if path.resolve() == given.resolve():
            raise UsageError(
                f"the results file {path} is the input file {given}; use another --out"
            )
    problem = writable_output(path)
    if problem:
        raise UsageError(f"the results file {path} {problem}; move it aside or use another --out")


def _check_names(files: dict[str, Path]) -> None:
    """Refuse two models whose results files would be one file."""
    seen: dict[Path, str] = {}
    for model, path in files.items():
        if path in seen:
            raise UsageError(
                f"--models {seen[path]!r} and {model!r} would share the results file {path}"
            )
        seen[path] = model


def _table(evals: Sequence[ModelEval]) -> str:
    """Render the figures as a table, one row a model."""
    headers = [
        "model",
        "success",
        "first try",
        "rescued",
        "attempts",
        "tokens/run",
        "p50 ms",
        "p95 ms",
        "cost $",
        "agreement",
    ]
    rows = []
    for figures in evals:
        agreement = figures.agreement
        rows.append(
            [
                figures.model,
                _ratio(figures.completed, figures.runs),
                _ratio(figures.first_try_valid, figures.runs),
                str(figures.rescued_by_reask),
                _number(figures.mean_attempts, 2),
                _number(figures.mean_tokens, 0),
                _number(figures.latency_ms.p50, 0),
                _number(figures.latency_ms.p95, 0),
                "-" if figures.cost_usd is None else _dollars(figures.cost_usd),
                "-"
                if agreement is None or agreement.share is None
                else _ratio(agreement.fields_equal, agreement.fields),
            ]
        )
    return format_table(headers, rows)


def _ratio(part: int, whole: int) -> str:
    if not whole:
        return "-"
    return f"{part}/{whole} ({round(100 * part / whole)}%)"


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _dollars(value: float) -> str:
    """Show a cost with four significant digits, so a fraction of a cent still shows."""
    if value == 0:
        return "0"
    digits = max(2, 4 - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"
