"""The flags the subcommands share, and what they set.

The agent (``AGENT``, ``--agents-dir``), the output schema (``--schema``, ``--schema-file``,
``--registry``), the run (``--param``, ``--model``, ``--profile``, ``--no-escalate``,
``--workspace``, ``--analytics-dir``), and the run-option flags ``run`` and ``run-many`` share,
with the :class:`RunOptions` they set:

``--max-retries``, ``--mode``, ``--extract-json``/``--no-extract-json``, ``--strict-json-only``,
``--validation-mode`` and ``--request-timeout``; a flag not given leaves its option unset, so the
agent's options and the environment defaults fall through.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import ValidationError

from agent_contracts._runs import RunOptions
from agent_core._registry import DEFAULT_REGISTRY_PATH
from agent_executor._cli.commands import UsageError

__all__ = [
    "add_agent_arguments",
    "add_option_arguments",
    "add_run_arguments",
    "add_schema_arguments",
    "profile_overrides",
    "run_options",
]


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

    Returns:
        The options; a flag not given leaves its option unset.

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


def add_agent_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Add the ``AGENT`` argument and ``--agents-dir`` to a subcommand.

    Args:
        parser: The subcommand.
        required: Whether ``AGENT`` must be given (the handler checks it when it need not).
    """
    parser.add_argument(
        "agent",
        nargs=None if required else "?",
        help="an agent id in the agents directory, or a path to agent.yml",
    )
    parser.add_argument("--agents-dir", type=Path, default=Path("agents"), help="default: ./agents")


def add_schema_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--schema NAME`` / ``--schema-file FILE`` (one of them) and ``--registry PATH``."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--schema", metavar="NAME", help="a registered output schema (see 'agentshape schemas')"
    )
    which.add_argument(
        "--schema-file", type=Path, metavar="FILE", help="an output schema in a JSON or YAML file"
    )
    parser.add_argument(
        "--registry",
        type=Path,
        default=DEFAULT_REGISTRY_PATH,
        metavar="PATH",
        help=f"the schema registry (default {DEFAULT_REGISTRY_PATH})",
    )


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the flags ``run`` and ``run-many`` share: model, workspace, analytics.

    The run-option flags are added by :func:`add_option_arguments`.
    """
    parser.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="a run parameter (repeatable)"
    )
    parser.add_argument(
        "--model",
        help="openai:MODEL, anthropic:MODEL, ollama:/vllm:/llamacpp:/compatible:MODEL or test "
        "(default: the agent's llm.model, else AGENTSHAPE_MODEL, else from OPENAI_API_KEY / "
        "ANTHROPIC_API_KEY; with none of these the run stops with exit 2)",
    )
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a provider-profile field, such as strict_tools=false (repeatable)",
    )
    parser.add_argument(
        "--no-escalate",
        action="store_true",
        help="do not retry a failed run on the agent's larger model tiers (llm.tiers)",
    )
    parser.add_argument("--workspace", type=Path, help="directory the input tools may read")
    parser.add_argument(
        "--analytics-dir",
        type=Path,
        help="where run events go as JSONL (default $AGENTSHAPE_ANALYTICS_DIR, else "
        ".agentshape/analytics; the command line always writes them)",
    )


def profile_overrides(args: argparse.Namespace) -> dict[str, object]:
    """Return the ``--profile KEY=VALUE`` overrides (``true``/``false`` read as booleans).

    Raises:
        UsageError: An override is not ``KEY=VALUE``.
    """
    overrides: dict[str, object] = {}
    for item in getattr(args, "profile", []):
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise UsageError(f"--profile takes KEY=VALUE, such as strict_tools=false; got {item!r}")
        lowered = value.strip().lower()
        overrides[key.strip()] = {"true": True, "false": False}.get(lowered, value.strip())
    return overrides
