"""Prompt tokens a run: agentshape's tool mode against instructor's on the same requests.

    .venv/bin/python bench/prompt_tokens.py [--agents all|pr-reviewer] [--limit 1.3]

Both frameworks call one capture server on loopback, which speaks OpenAI's chat completions,
records each request body and answers with a ``submit_result``-style tool call whose arguments
are generated from the tool's own parameters (so each run ends on its first request). For every
shipped agent with an output contract (pr-reviewer and the contracts ``dev.py integration``
runs), agentshape runs the agent as a user would (``llamacpp:`` model, tool mode), and
instructor runs ``Mode.TOOLS`` with the same system prompt and task, its response model built
from the same schema. The counts are o200k_base tokens (``bpe-openai``, the ``bench`` extra)
of each message's text plus the output tool's JSON and the tool choice: the part of the prompt
each framework writes for the contract (a server adds a few template tokens a message, the same
for both). The agent's input tools, which agentshape offers beside ``submit_result`` and
instructor is not given, are counted in a column of their own. Exits 1
when any contract's ratio is over ``--limit``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import JsonValue  # noqa: E402

from agent_contracts import RunOptions, RunRequest  # noqa: E402
from agent_core._schema_sample import generate_value  # noqa: E402
from agent_executor import Agent, NullAnalytics  # noqa: E402

MODEL = "gemma-3-270m"
TASK = (
    "Review pull request #480: payments retry failed card charges with exponential back-off. "
    "The diff touches src/payments/retry.py (new retry loop) and tests/test_retry.py."
)


class _Capture(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, JsonValue]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        tool = body["tools"][-1]["function"]
        arguments = generate_value(tool["parameters"])
        reply = {
            "id": "chatcmpl-capture",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": tool["name"],
                                    "arguments": json.dumps(arguments),
                                },
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def capture_server() -> Iterator[str]:
    """Serve :class:`_Capture` on a free loopback port; yield its ``/v1`` URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        thread.join()


def prompt_tokens(body: dict[str, JsonValue], encode: object) -> tuple[int, int]:
    """Return the tokens a request spends on its contract, and on the agent's input tools.

    The contract's part is every message's text, the output tool (the last one offered) and
    the tool choice; the input tools' definitions are counted apart, since instructor is given
    none (a user of it would add the same definitions).
    """
    assert callable(encode)
    total = 0
    messages = body.get("messages")
    assert isinstance(messages, list)
    for message in messages:
        assert isinstance(message, dict)
        content = message.get("content")
        if isinstance(content, str):
            total += len(encode(content))
    tools = body.get("tools")
    assert isinstance(tools, list) and tools
    total += len(encode(json.dumps(tools[-1], separators=(",", ":"))))
    total += len(encode(json.dumps(body.get("tool_choice"), separators=(",", ":"))))
    inputs = len(encode(json.dumps(tools[:-1], separators=(",", ":")))) if tools[:-1] else 0
    return total, inputs


async def measure(url: str, path: Path, encode: object) -> tuple[int, int, int] | None:
    """Return agentshape's and instructor's prompt tokens, and the input tools', for one agent."""
    import instructor
    import openai

    env = {"LLAMACPP_BASE_URL": url}
    agent = Agent.from_yaml(
        path, model=f"llamacpp:{MODEL}", env=env, analytics=NullAnalytics(), workspace=ROOT
    )
    if agent.config.output_schema is None and agent.config.default_output_schema is None:
        return None
    _Capture.bodies.clear()
    result = await agent.run(
        RunRequest(task=TASK, options=RunOptions(output_mode="tool")), escalate=False
    )
    assert result.ok, result.error
    ours, inputs = prompt_tokens(_Capture.bodies[0], encode)
    built = agent.contract.model if agent.contract is not None else None
    assert built is not None

    class Output(built):  # type: ignore[valid-type,misc]
        """The agent's output."""

        @classmethod
        def model_json_schema(cls, *args: object, **kwargs: object) -> dict[str, JsonValue]:
            # instructor names its tool after the schema's title, which a schema-built model
            # does not carry.
            schema = super().model_json_schema(*args, **kwargs)  # type: ignore[arg-type]
            return {"title": "Output", **schema}

    client = instructor.from_openai(
        openai.AsyncOpenAI(base_url=url, api_key="capture"), mode=instructor.Mode.TOOLS
    )
    _Capture.bodies.clear()
    await client.chat.completions.create(
        model=MODEL,
        response_model=Output,
        max_retries=0,
        messages=[
            {"role": "system", "content": agent.config.system_prompt or ""},
            {"role": "user", "content": TASK},
        ],
    )
    theirs, _ = prompt_tokens(_Capture.bodies[0], encode)
    return ours, theirs, inputs


async def main_async(args: argparse.Namespace) -> int:
    """Measure every agent; print a table and the median ratio."""
    from bpe_openai import get_encoding

    encode = get_encoding("o200k_base").encode
    files = sorted((ROOT / "agents").glob("*/agent.yml"))
    if args.agents != "all":
        files = [path for path in files if path.parent.name == args.agents]
    ratios: list[float] = []
    print(f"{'agent':<26}{'agentshape':>11}{'instructor':>11}{'ratio':>7}{'input tools':>13}")
    with capture_server() as url:
        for path in files:
            counts = await measure(url, path, encode)
            if counts is None:
                continue
            ours, theirs, inputs = counts
            ratios.append(ours / theirs)
            line = f"{path.parent.name:<26}{ours:>11}{theirs:>11}{ours / theirs:>7.2f}"
            print(f"{line}{inputs:>13}")
    print(f"median ratio {statistics.median(ratios):.2f}, worst {max(ratios):.2f}")
    return 0 if max(ratios) <= args.limit else 1


def main() -> int:
    """Parse the flags and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="all", help="all, or one agent's folder name")
    parser.add_argument("--limit", type=float, default=1.3, help="the most ratio allowed")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
