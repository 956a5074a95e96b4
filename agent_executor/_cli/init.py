"""``agentshape init [DIR]``: a starter fleet, so a user outside this repository can begin.

It writes ``DIR/agents/triage/agent.yml``, one agent with every part of the file form explained in
comments, and never overwrites a file unless ``--force`` says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from agent_executor._cli.commands import EXIT_OK, Subcommands, UsageError

__all__ = ["STARTER_ID", "STARTER_YAML", "init_command", "register"]

STARTER_ID = "triage"
"""The id of the agent ``init`` writes."""

STARTER_YAML = """\
# An agentshape agent: its instructions, its model and its output contract.
# Check it with `agentshape list`; run it with
#   agentshape run triage --task "The login page returns 500 for every user." --model test
# (`--model test` is the offline test model; name a real one, such as openai:gpt-4.1-mini with
# OPENAI_API_KEY set, or put it under llm.model below).
schema: kb.agent/1
id: triage
name: Bug triage
description: Sorts an incoming bug report by severity and says why.

llm:
  # model: openai:gpt-4.1-mini     # or anthropic:claude-sonnet-4-5, ollama:qwen3, vllm:..., test
  temperature: 0

context:
  static:
    system: |
      You triage bug reports. Read the report, decide how bad it is for the people who use
      the product, and say why in one sentence.

# Input tools the model may call, confined to --workspace: fs:read, fs:list, fs:search.
tools: []

limits:
  maxSteps: 4                       # model turns; submit_result is forced on the last one
  timeoutSeconds: 60

output:
  # The contract: a JSON Schema (Draft-7). The model must call submit_result with a value that
  # meets it exactly; a wrong value is sent back with every error, once (maxRetries), and a
  # run that is still wrong fails with the errors and the last output.
  schema:
    type: object
    required: [severity, reason]
    properties:
      severity: {enum: [low, medium, high, critical]}
      reason: {type: string, minLength: 1}
      component: {type: string}     # optional: left out when the report does not say
    additionalProperties: false
  maxRetries: 1                     # the default: one re-prompt
"""
"""The starter agent's ``agent.yml``."""


def register(commands: Subcommands) -> None:
    """Add ``init`` to the command line."""
    init = commands.add_parser(
        "init",
        help="write a starter fleet (agents/triage/agent.yml, one commented agent)",
        description="Write DIR/agents/triage/agent.yml, a starter agent with every part "
        "explained, so that 'agentshape list' and 'agentshape run triage' work at once.",
    )
    init.add_argument(
        "dir", nargs="?", type=Path, default=Path("."), help="where to write (default .)"
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing agent.yml")
    init.set_defaults(handler=init_command)


def init_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``agentshape init``.

    Raises:
        UsageError: The file exists (without ``--force``), or DIR is a file.
    """
    root: Path = args.dir
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} is a file; give a directory")
    target = root / "agents" / STARTER_ID / "agent.yml"
    if target.exists() and not args.force:
        raise UsageError(f"{target} exists already; --force overwrites it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(STARTER_YAML, encoding="utf-8")
    fleet = root / "agents"
    where = "" if root == Path(".") else f" --agents-dir {fleet}"
    print(f"wrote {target}", file=out)
    print("next:", file=out)
    print(f"  agentshape list {fleet}", file=out)
    print(
        f'  agentshape run {STARTER_ID}{where} --task "The login page returns 500 for every '
        'user." --model test',
        file=out,
    )
    return EXIT_OK
