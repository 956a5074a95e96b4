"""``agentshape show``, ``validate`` and ``codegen``: one agent's output contract, looked at.

``show`` prints what a model is sent: the enriched system prompt, the ``submit_result`` tool as
OpenAI, Anthropic and OpenAI-compatible servers get it (each with its compile report: what that
provider will not enforce, and what llama.cpp's grammar leaves out), and the input tools.
``validate`` judges a saved output against the contract. ``codegen`` writes Pydantic classes
for the contract with datamodel-code-generator.

All three take ``--schema NAME`` / ``--schema-file FILE`` like ``run``, for an agent without an
``output_schema`` of its own.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel, JsonValue

from agent_contracts._config import AgentConfig
from agent_contracts._errors import ConfigError
from agent_contracts._runs import RunOptions, RunRequest, merge_options
from agent_contracts._validation import ValidationIssue
from agent_core._contract import OutputContract, resolve_contract
from agent_core._dialects import Dialect
from agent_core._gbnf_grammar import schema_to_gbnf
from agent_core._json_text import dump_json
from agent_core._prompts import PromptMode, enriched_system_prompt
from agent_core._registry import SchemaRegistry
from agent_core._user_files import write_text_atomically
from agent_executor._agent import Agent
from agent_executor._analytics import NullAnalytics
from agent_executor._child_sessions import TOOL_NAME
from agent_executor._cli.agents import start_session_tool, unoffered_tools_note
from agent_executor._cli.commands import EXIT_OK, EXIT_RUN_FAILED, Subcommands, UsageError
from agent_executor._cli.flags import add_agent_arguments, add_schema_arguments
from agent_executor._cli.inputs import (
    CallerSchema,
    caller_schema,
    load_agent,
    parse_param,
    read_json_file,
)
from agent_executor._planning import run_spec
from agent_executor._providers.base import ToolNameMap
from agent_executor._run import first_request
from agent_executor._tools import build_input_tools

__all__ = ["class_name_for", "codegen_command", "register", "show_command", "validate_command"]

CODEGEN_INSTALL = "pip install 'agentshape[codegen]'"
"""What to install for ``agentshape codegen``."""

_DIALECT_TITLES: dict[Dialect, str] = {
    "openai": "OpenAI (function tool)",
    "anthropic": "Anthropic (tool)",
    "neutral": "neutral (Ollama and other OpenAI-compatible servers, test models)",
}
_CODEGEN_TIMEOUT_S = 120


def _contract(config: AgentConfig, schema: CallerSchema) -> OutputContract | None:
    """Resolve the contract a run of ``config`` with the caller's schema would enforce."""
    named = (schema.name or "named", schema.named) if schema.named is not None else None
    return resolve_contract(
        config,
        output_type=None,
        inline=schema.inline,
        named=named,
        lenient=merge_options(config.options).lenient_formats,
    )


def _required_contract(config: AgentConfig, schema: CallerSchema) -> OutputContract:
    contract = _contract(config, schema)
    if contract is None:
        raise UsageError(
            f"agent {config.id!r} has no output contract (it answers in free text); give "
            "--schema NAME or --schema-file FILE to use one"
        )
    return contract


def _describe(contract: OutputContract) -> str:
    where = {
        "agent": "the agent's output_schema",
        "default": "the agent's default_output_schema",
        "inline": "the --schema-file schema",
        "named": f"registered schema {contract.name!r}",
    }[contract.source]
    return f"{where} (hash {contract.hash[:12]})"


def register(commands: Subcommands) -> None:
    """Add ``show``, ``validate`` and ``codegen`` to the command line."""
    show = commands.add_parser(
        "show", help="show the prompt and the submit_result tool each provider is sent"
    )
    add_agent_arguments(show)
    add_schema_arguments(show)
    show.add_argument(
        "--mode",
        choices=["tool", "prompted"],
        help="the prompt for tool mode or prompted/native mode (default: the agent's mode)",
    )
    show.add_argument("--workspace", type=Path, help="directory the input tools may read")
    show.add_argument(
        "--model",
        help="the model whose first request is shown, built by the run loop itself "
        "(default: the agent's own model, else test, the offline model; e.g. "
        "openai:gpt-4.1-mini with its key set)",
    )
    show.add_argument(
        "--task",
        help="the task in the first request shown (default '(the task)'; with --param and no "
        "--task, the parameters alone, as a service run without a prompt sends them)",
    )
    show.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="a run parameter (repeatable)"
    )
    show.add_argument("--json", action="store_true", help="print it all as one JSON object")
    show.set_defaults(handler=show_command)

    validate = commands.add_parser(
        "validate", help="check a saved output (a JSON file) against an agent's contract"
    )
    add_agent_arguments(validate)
    validate.add_argument("file", type=Path, help="the output, as a JSON file")
    add_schema_arguments(validate)
    validate.set_defaults(handler=validate_command)

    codegen = commands.add_parser(
        "codegen", help="write Pydantic classes for an agent's output contract"
    )
    add_agent_arguments(codegen)
    add_schema_arguments(codegen)
    codegen.add_argument("--out", type=Path, metavar="FILE", help="write here, not to stdout")
    codegen.add_argument(
        "--class-name", help="the root class's name (default: from the agent id, e.g. GraderOutput)"
    )
    codegen.set_defaults(handler=codegen_command)


# -- show ----------------------------------------------------------------------------------------


def show_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``agentshape show``."""
    path, config = load_agent(args.agent, args.agents_dir)
    contract = _contract(config, caller_schema(args, config))
    configured = config.options.output_mode
    mode: PromptMode = args.mode or ("prompted" if configured in ("prompted", "native") else "tool")
    own = [name for name in config.tools if name != TOOL_NAME]
    tools = build_input_tools(own, workspace=args.workspace or Path.cwd())
    if len(own) < len(config.tools):
        tools.append(start_session_tool(args))
    model = args.model or config.model or "test"
    unbuilt = ""
    try:
        first, chosen, grammar_output = _first_request(args, config, mode, model)
    except ConfigError as exc:
        if args.model is not None or model == "test":
            raise
        # The agent's own model needs a key or URL this shell lacks: show the offline model's.
        unbuilt = f"{model} cannot be built here ({exc.format_message()}); shown for test"
        model = "test"
        first, chosen, grammar_output = _first_request(args, config, mode, model)
    if not args.mode and configured is None:
        # No mode asked for: the model's profile chose one (native under a grammar...).
        mode = "prompted" if chosen in ("prompted", "native") else "tool"
    wire = ToolNameMap([*(tool.name for tool in tools), "submit_result"])
    system = config.system_prompt
    if contract is not None:
        system = enriched_system_prompt(
            system, contract.schema, mode=mode, example=chosen == "prompted"
        )
    input_tools: list[JsonValue] = [
        {
            "name": wire.to_wire(tool.name),
            "agentshape_name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
        for tool in tools
    ]
    output_tool: dict[str, JsonValue] = {}
    reports: dict[str, JsonValue] = {}
    if contract is not None:
        output_tool = {
            "openai": contract.tool.openai_tool(strict=True),
            "anthropic": contract.tool.anthropic_tool(),
            "neutral": contract.tool.neutral_tool(),
        }
        reports = {d: contract.tool.report(d).model_dump(mode="json") for d in _DIALECT_TITLES}
        reports["llamacpp_grammar"] = list(schema_to_gbnf(contract.tool.parameters).notes)
    if args.json:
        document: dict[str, JsonValue] = {
            "agent": config.id,
            "file": str(path),
            "model": config.model,
            "model_tiers": list(config.model_tiers),
            "mode": mode if contract is not None else "text",
            "output_mode": chosen,
            "schema_source": contract.source if contract else None,
            "schema_name": contract.name if contract else None,
            "schema_hash": contract.hash if contract else None,
            "system_prompt": system,
            "output_tool": output_tool or None,
            "reports": reports or None,
            "input_tools": input_tools,
            "first_request": first,
        }
        out.write(dump_json(document, indent=2) + "\n")
        return EXIT_OK
    lines = [f"agent {config.id} ({config.name}), {path}"]
    lines.append(f"model: {config.model or '(chosen at run time)'}")
    if config.model_tiers:
        lines.append(f"escalation tiers: {', '.join(config.model_tiers)}")
    if contract is None:
        lines.append("output contract: none; the agent answers in free text")
    else:
        lines.append(f"output contract: {_describe(contract)}")
    if unbuilt:
        lines.append(f"note: {unbuilt}")
    if contract is not None:
        lines.append(f"output mode on {model}: {chosen} ({_why(args, configured, chosen)})")
    unoffered = unoffered_tools_note([t.name for t in tools], chosen, grammar_output=grammar_output)
    listed = ", ".join(t.name for t in tools) or "none"
    lines.append(f"input tools: {listed}" + (f" ({unoffered})" if unoffered else ""))
    heading = f"system prompt ({mode} mode)" if contract is not None else "system prompt"
    lines += ["", f"=== {heading} ===", system or "(empty)"]
    if contract is not None:
        for dialect, title in _DIALECT_TITLES.items():
            definition = output_tool[dialect]
            lines += ["", f"=== submit_result for {title} ===", _dumps(definition)]
            lines.append(contract.tool.report(dialect).format())
        notes = schema_to_gbnf(contract.tool.parameters).notes
        lines += ["", "=== native output for llama.cpp (agentshape's GBNF grammar) ==="]
        lines.append(
            "llamacpp: the grammar enforces the schema while decoding, except as noted "
            "(validation and the re-ask enforce those)"
            if notes
            else "llamacpp: the grammar enforces the whole schema while decoding"
        )
        lines += [f"  - {note}" for note in notes]
    for tool, definition in zip(tools, input_tools, strict=True):
        lines += ["", f"=== input tool {tool.name} (sent as {wire.to_wire(tool.name)}) ==="]
        lines.append(_dumps(definition))
    lines += ["", f"=== first request to {model} (built by the run loop) ===", _dumps(first)]
    out.write("\n".join(lines) + "\n")
    return EXIT_OK


def _why(args: argparse.Namespace, configured: str | None, chosen: str) -> str:
    """Return who chose a run's output mode, for ``show``."""
    if args.mode:
        return "--mode"
    if configured is not None:
        return "the agent's output.mode"
    if chosen == "native":
        return "the model's profile: a grammar enforces the answer while decoding"
    return "the model's profile"


def _first_request(
    args: argparse.Namespace, config: AgentConfig, mode: PromptMode, model: str
) -> tuple[JsonValue, str, bool]:
    """Return a run's first request (as the run loop builds it), mode and grammar_output."""
    own = [name for name in config.tools if name != TOOL_NAME]
    agent: Agent[BaseModel] = Agent(
        config.model_copy(update={"tools": own}),
        workspace=args.workspace,
        analytics=NullAnalytics(),
        registry=SchemaRegistry(args.registry),
    )
    if len(own) < len(config.tools):
        agent.tools.append(start_session_tool(args))
    options = RunOptions(output_mode=mode) if args.mode else RunOptions()
    schema = caller_schema(args, config)
    parameters = dict(parse_param(p) for p in args.param)
    task = args.task if args.task is not None else ("" if parameters else "(the task)")
    request = RunRequest(
        task=task,
        parameters=parameters,
        options=options,
        output_schema=schema.inline,
        schema_name=schema.name if schema.inline is None else None,
    )
    plan = agent.plan(request, model)
    rung = plan.ladder[0]
    turn = first_request(run_spec(agent.config, agent.tools, plan, rung))
    dumped: JsonValue = turn.model_dump(mode="json", exclude_defaults=True)
    return dumped, rung[2], rung[3].grammar_output


def _dumps(value: JsonValue) -> str:
    return dump_json(value, indent=2)


# -- validate ------------------------------------------------------------------------------------


def validate_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``agentshape validate``: exit 0 when the output is valid, 1 when it is not."""
    _, config = load_agent(args.agent, args.agents_dir)
    contract = _required_contract(config, caller_schema(args, config))
    value = read_json_file(args.file, what="output file")
    issues = contract.issues(value)
    if value is None and not issues:
        issues = [ValidationIssue(path="$", message="null is not a result", keyword="type")]
    if not issues:
        print(
            f"OK: {args.file} meets agent {config.id}'s contract, {_describe(contract)}", file=out
        )
        return EXIT_OK
    count = f"{len(issues)} problem{'s' if len(issues) != 1 else ''}"
    print(f"INVALID: {args.file} breaks agent {config.id}'s contract ({count}):", file=out)
    for issue in issues:
        print(f"  {issue}", file=out)
    return EXIT_RUN_FAILED


# -- codegen -------------------------------------------------------------------------------------


def class_name_for(agent_id: str) -> str:
    """Return the root class name for an agent's output: ``pr-reviewer`` -> ``PrReviewerOutput``."""
    parts = [part for part in re.split(r"[^A-Za-z0-9]+", agent_id) if part]
    name = "".join(part[:1].upper() + part[1:] for part in parts) + "Output"
    return name if name[0].isalpha() else f"Agent{name}"


def codegen_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``agentshape codegen``: exit 0 with the source written, 1 when generation failed."""
    path, config = load_agent(args.agent, args.agents_dir)
    contract = _required_contract(config, caller_schema(args, config))
    class_name = args.class_name or class_name_for(config.id)
    if not class_name.isidentifier():
        raise UsageError(f"--class-name {class_name!r} is not a Python identifier")
    if importlib.util.find_spec("datamodel_code_generator") is None:
        raise UsageError(
            f"codegen needs datamodel-code-generator, which is not installed: {CODEGEN_INSTALL}"
        )
    header = (
        f"# Generated by `agentshape codegen` from agent {config.id!r} ({path})\n"
        f"# with datamodel-code-generator. Output contract: {_describe(contract)}."
    )
    command = [
        sys.executable,
        "-m",
        "datamodel_code_generator",
        "--input-file-type",
        "jsonschema",
        "--output-model-type",
        "pydantic_v2.BaseModel",
        "--class-name",
        class_name,
        "--target-python-version",
        "3.11",
        "--use-standard-collections",
        "--use-union-operator",
        "--use-annotated",
        "--field-constraints",
        "--disable-timestamp",
        "--custom-file-header",
        header,
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore::FutureWarning"}
    try:
        completed = subprocess.run(
            command,
            input=json.dumps(contract.schema),
            capture_output=True,
            text=True,
            timeout=_CODEGEN_TIMEOUT_S,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        print(
            f"agentshape: datamodel-code-generator took longer than {_CODEGEN_TIMEOUT_S} s",
            file=err,
        )
        return EXIT_RUN_FAILED
    if completed.returncode != 0 or not completed.stdout.strip():
        reason = [line for line in completed.stderr.splitlines() if line.strip()]
        detail = reason[-1] if reason else f"exit code {completed.returncode}"
        print(
            f"agentshape: datamodel-code-generator failed on agent {config.id!r}: {detail}",
            file=err,
        )
        return EXIT_RUN_FAILED
    source = completed.stdout if completed.stdout.endswith("\n") else completed.stdout + "\n"
    if args.out is None:
        out.write(source)
    else:
        write_text_atomically(args.out, source)
        print(f"wrote {class_name} to {args.out}", file=err)
    return EXIT_OK
