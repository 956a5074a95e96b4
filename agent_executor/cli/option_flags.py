"""The run-option flags ``run`` and ``run-many`` share, and the :class:`RunOptions` they set.

``--max-retries``, ``--mode``, ``--extract-json``/``--no-extract-json``, ``--strict-json-only``,
``--validation-mode`` and ``--request-timeout``; a flag not given leaves its option unset, so the
agent's options and the environment defaults fall through.
"""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from agent_contracts.runs import RunOptions
from agent_executor.cli.inputs import UsageError

__all__ = ["add_option_arguments", "run_options"]


def add_option_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the run-option flags to ``parser``."""
    parser.add_argument("--max-retries", type=int, help="re-prompts after a failed attempt")
    parser.add_argument(
        "--mode", choices=["tool", "native", "prompted"], help="how the output is asked for"
    )
    parser.add_argument(
        "--extract-json",
        action=argparse.BooleanOptionalAction,
        help="recover the JSON value from prose or a code fence around it (default on)",
    )
    parser.add_argument(
        "--strict-json-only",
        action=argparse.BooleanOptionalAction,
        help="fail an attempt whose reply has any text around the JSON value (default off)",
    )
    parser.add_argument(
        "--validation-mode",
        choices=["strict", "lenient"],
        help="strict asserts 'format' (the default); lenient reads it as an annotation",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        metavar="SECONDS",
        help="most seconds one model request may take (default 120; a CPU server needs more)",
    )


_FLAGS = {
    "max_retries": "--max-retries",
    "output_mode": "--mode",
    "request_timeout_s": "--request-timeout",
}


def run_options(args: argparse.Namespace) -> RunOptions:
    """Return the run options the flags set.

    Raises:
        UsageError: A flag's value is out of range.
    """
    values: dict[str, object] = {}
    if args.max_retries is not None:
        values["max_retries"] = args.max_retries
    if args.mode is not None:
        values["output_mode"] = args.mode
    for name in ("extract_json", "strict_json_only", "validation_mode"):
        if getattr(args, name, None) is not None:
            values[name] = getattr(args, name)
    if getattr(args, "request_timeout", None) is not None:
        values["request_timeout_s"] = args.request_timeout
    try:
        return RunOptions.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{_FLAGS.get(str(e['loc'][0]), e['loc'][0]) if e['loc'] else 'options'}: {e['msg']}"
            for e in exc.errors()
        )
        raise UsageError(problems) from exc
