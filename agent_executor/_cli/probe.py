"""``agentshape probe MODEL``: ask an OpenAI-compatible server what it accepts.

Prints each probe's outcome and the provider profile that follows, ready to paste into an
agent's ``llm:`` section or to pass as ``--profile KEY=VALUE`` flags (see
:mod:`agent_executor._probe`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import TextIO, cast

from agent_contracts._errors import ProviderError
from agent_contracts._profiles import ProviderProfile
from agent_executor._cli.commands import EXIT_OK, EXIT_RUN_FAILED, Subcommands, UsageError
from agent_executor._probe import PROBE_REQUESTS, ProbeReport, probe_profile
from agent_executor._providers.base import ModelTurn, ModelTurnRequest
from agent_executor._providers.resolve import resolve_model

__all__ = ["probe_command", "register"]

_DEFAULT_TIMEOUT_S = 120.0

_UNREACHABLE = {
    "provider_connection_error": "cannot be reached (is it running, and is its URL right?)",
    "provider_timeout": "did not answer in time (a CPU server may need --request-timeout 600)",
    "provider_authentication_error": "refused the API key",
}

Send = Callable[[ModelTurnRequest], Awaitable[ModelTurn]]


def register(commands: Subcommands) -> None:
    """Add ``probe`` to the command line."""
    probe = commands.add_parser(
        "probe",
        help="ask an OpenAI-compatible server what it accepts and print the profile to use "
        "(exit 1 when it refuses tools and native output alike)",
    )
    probe.add_argument(
        "model", help="the model, such as llamacpp:gemma-3-270m, ollama:qwen3 or vllm:m"
    )
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.add_argument(
        "--request-timeout",
        type=float,
        default=_DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"most seconds each probe may take (default {_DEFAULT_TIMEOUT_S:.0f})",
    )
    probe.set_defaults(handler=probe_command)


def probe_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``agentshape probe``.

    Raises:
        UsageError: The model is not served over the OpenAI wire, or the timeout is not positive.
        ConfigError: The model string is unknown or its key or URL is missing.
        ProviderError: The server cannot be reached, does not answer in time, or refuses the key.
    """
    if args.request_timeout <= 0:
        raise UsageError("--request-timeout must be more than 0 seconds")
    provider = resolve_model(args.model, env=os.environ)
    variant = getattr(provider, "variant", None)
    if variant is None:
        raise UsageError(
            f"probe asks servers that speak the OpenAI wire (openai:, ollama:, vllm:, "
            f"llamacpp:, compatible:); {args.model!r} is a {provider.name} model"
        )
    where = getattr(provider, "base_url", "")
    print(f"probing {args.model} at {where} ({PROBE_REQUESTS} small requests)", file=err)

    def target(profile: ProviderProfile) -> Send:
        return cast(Send, variant(profile=profile, max_retries=0).request)

    try:
        report = asyncio.run(
            probe_profile(args.model, target, provider.profile, timeout_s=args.request_timeout)
        )
    except ProviderError as exc:
        raise UsageError(
            f"{args.model}: the server at {where} {_UNREACHABLE.get(exc.kind, 'failed')} ({exc})"
        ) from exc
    out.write(_json(report) if args.json else _text(report, provider.profile))
    usable = report.profile.supports_tools or report.profile.native_output
    return EXIT_OK if usable else EXIT_RUN_FAILED


def _json(report: ProbeReport) -> str:
    document = {
        "model": report.model,
        "probes": [
            {"name": p.name, "accepted": p.accepted, "honoured": p.honoured, "detail": p.detail}
            for p in report.probes
        ],
        "profile": report.overrides(),
    }
    return json.dumps(document, indent=2) + "\n"


def _text(report: ProbeReport, given: ProviderProfile) -> str:
    lines = []
    for probe in report.probes:
        if not probe.accepted:
            outcome = f"refused: {probe.detail}"
        elif probe.honoured:
            outcome = "accepted"
        else:
            outcome = f"accepted, but {probe.detail}"
        lines.append(f"  {probe.name:<27} {outcome}")
    fields = report.overrides()
    inline = ", ".join(f"{key}: {_yaml(value)}" for key, value in fields.items())
    changed = [f"--profile {key}={_yaml(value)}" for key, value in report.flags(given).items()]
    lines += [
        "",
        "profile found; paste into the agent's agent.yml:",
        "llm:",
        f"  model: {report.model}",
        f"  profile: {{{inline}}}",
    ]
    if changed:
        lines += ["", "or, for one run, next to --model:", "  " + " ".join(changed)]
    else:
        lines += ["", f"(the same as the {report.model.split(':')[0]}: profile; nothing to add)"]
    if report.drops_tool_messages:
        lines += [
            "",
            "this server drops tool messages: re-prompts go as user messages "
            "(reprompt_as: user), which reach the model",
        ]
    if not report.profile.supports_tools and not report.profile.native_output:
        lines += ["", "this server takes neither tools nor native output: use --mode prompted"]
    return "\n".join(lines) + "\n"


def _yaml(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
