"""The contenders of ``bench/run.py``: one structured pr-reviewer answer each, several ways.

Each contender asks the local server (``bench/fleet_server.py``) for a pr-reviewer review and
returns it validated:

- ``raw SDK (floor)``: the cheapest correct path a user would write with the SDK: the same
  messages and ``submit_result`` tool agentshape sends, posted as prepared JSON through the
  SDK's generic ``client.post`` (its retries, timeouts and error types, no walk of the typed
  request parameters), the reply read with ``response.json()`` (``json.loads`` of its bytes:
  no charset lookup) and the arguments validated with
  ``Review.model_validate_json`` into a hand-written Pydantic model; on invalid arguments it
  sends the errors back as a tool result and asks again (once), as a hand-written loop would.
  ``raw_floor_sync`` is the same with the synchronous ``OpenAI`` client;
- ``raw SDK, typed create``: the same through ``chat.completions.create`` (the SDK walks the
  typed parameters and builds typed response objects): the code a user writes without a
  framework, the floor of ``bench/guard.py``; ``raw_create_sync`` is the same with the
  synchronous ``OpenAI`` client;
- ``agentshape``: ``Agent(config, model=OpenAIProvider(...))`` and ``await agent.run(task)``,
  ``.output``;
- ``agentshape, streamed``: the same agent through ``agent.run_stream(task)`` (the server
  streams its reply in chunks of four characters), every event taken, the ``RunFinished``
  result's ``.output``;
- ``instructor``: ``instructor.from_openai(client, mode=Mode.TOOLS)`` and
  ``create(response_model=Review)``;
- ``pydantic-ai``: ``Agent(OpenAIChatModel(...), output_type=ToolOutput(Review))`` and
  ``await agent.run(task)``, ``.output``.

Every one keeps one SDK client for all its calls (agentshape's provider pools its own, one per
event loop). A contender's ``run`` returns the output object; ``close`` closes its client.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx2
import openai
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_contracts import (
    AgentConfig,
    AttemptEvent,
    ModelTurnEvent,
    RunCompletedEvent,
    RunStartedEvent,
    Usage,
)
from agent_core import enriched_system_prompt, load_agent_config
from agent_executor import Agent, AnalyticsSink, NullAnalytics, OpenAIProvider, RunFinished

ROOT = Path(__file__).resolve().parents[1]
AGENT_FILE = ROOT / "agents" / "pr-reviewer" / "agent.yml"
MODEL = "bench-model"
API_KEY = "bench-key"
TASK = (
    "Review pull request #482 (payments: retry failed card charges with exponential back-off "
    "and an idempotency key per charge). The diff touches src/payments/retry.py, "
    "src/payments/client.py and tests/test_retry.py."
)


class Comment(BaseModel):
    """Hand-written model of one review comment (as in agents/pr-reviewer/agent.yml)."""

    model_config = ConfigDict(extra="forbid")

    file: str
    line: int = Field(ge=1)
    severity: Literal["nitpick", "suggestion", "concern", "blocker"]
    message: str


class Metrics(BaseModel):
    """Hand-written model of the review metrics."""

    model_config = ConfigDict(extra="forbid")

    files_reviewed: int | None = Field(default=None, ge=0)
    lines_changed: int | None = Field(default=None, ge=0)
    complexity_score: float | None = Field(default=None, ge=0, le=10)


class Review(BaseModel):
    """Hand-written model of the pr-reviewer output (the same contract as the agent's schema)."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(description="Brief summary of the PR")
    approval: Literal["approve", "request_changes", "comment"] = Field(
        description="Review decision"
    )
    comments: list[Comment]
    metrics: Metrics | None = None


FLOOR_NAME = "raw SDK post (floor)"


@dataclass
class Contender:
    """One way of getting the review: ``run`` returns the validated output."""

    name: str
    run: Callable[[], Awaitable[object]]
    close: Callable[[], Awaitable[None]]


@dataclass
class SyncContender:
    """A synchronous way of getting the review: ``run`` returns the validated output."""

    name: str
    run: Callable[[], object]
    close: Callable[[], None]


def pr_reviewer() -> AgentConfig:
    """Return the pr-reviewer agent's config (``agents/pr-reviewer/agent.yml``)."""
    return load_agent_config(AGENT_FILE)


def _client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY)


def _agentshape_request(config: AgentConfig) -> tuple[str, dict[str, Any]]:
    """Return the system prompt and the ``submit_result`` tool agentshape sends for the agent."""
    agent: Agent[BaseModel] = Agent(config, model="test", analytics=NullAnalytics())
    contract = agent.contract
    assert contract is not None
    system = enriched_system_prompt(config.system_prompt, contract.schema, mode="tool")
    tool = contract.tool_definition("openai")
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.strict:
        function["strict"] = True
    return system, {"type": "function", "function": function}


def raw_create(base_url: str, config: AgentConfig) -> Contender:
    """The raw SDK's typed ``create``, then ``model_validate_json``; one re-ask on bad arguments."""
    client = _client(base_url)
    system, tool = _agentshape_request(config)
    tools: list[Any] = [tool]
    choice: Any = {"type": "function", "function": {"name": "submit_result"}}

    async def run() -> Review:
        messages: list[Any] = [
            {"role": "system", "content": system},
            {"role": "user", "content": TASK},
        ]
        for _ in range(2):
            response = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=tools, tool_choice=choice
            )
            calls = response.choices[0].message.tool_calls or []
            call = calls[0]
            assert call.type == "function"
            try:
                return Review.model_validate_json(call.function.arguments)
            except ValidationError as exc:
                messages += _reask(call.id, call.function.name, call.function.arguments, exc)
        raise RuntimeError("the arguments were invalid twice")

    return Contender("raw SDK, typed create", run, client.close)


def raw_create_sync(base_url: str, config: AgentConfig) -> SyncContender:
    """``raw_create`` with the synchronous ``OpenAI`` client (what a sync caller writes)."""
    client = openai.OpenAI(base_url=base_url, api_key=API_KEY)
    system, tool = _agentshape_request(config)
    tools: list[Any] = [tool]
    choice: Any = {"type": "function", "function": {"name": "submit_result"}}

    def run() -> Review:
        messages: list[Any] = [
            {"role": "system", "content": system},
            {"role": "user", "content": TASK},
        ]
        for _ in range(2):
            response = client.chat.completions.create(
                model=MODEL, messages=messages, tools=tools, tool_choice=choice
            )
            calls = response.choices[0].message.tool_calls or []
            call = calls[0]
            assert call.type == "function"
            try:
                return Review.model_validate_json(call.function.arguments)
            except ValidationError as exc:
                messages += _reask(call.id, call.function.name, call.function.arguments, exc)
        raise RuntimeError("the arguments were invalid twice")

    return SyncContender("raw SDK, typed create, sync", run, client.close)


def _reask(call_id: str, name: str, arguments: str, exc: ValidationError) -> list[Any]:
    """The two messages a hand-written loop sends back after invalid arguments."""
    function = {"name": name, "arguments": arguments}
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"Fix these: {exc}"},
    ]


def _floor_body(config: AgentConfig) -> tuple[dict[str, Any], list[Any]]:
    """The request body the floor posts (messages last, to be copied per run)."""
    system, tool = _agentshape_request(config)
    body = {
        "model": MODEL,
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "submit_result"}},
    }
    return body, [{"role": "system", "content": system}, {"role": "user", "content": TASK}]


def _floor_answer(reply: httpx2.Response) -> tuple[str, str, str]:
    """Return the tool call's id, name and arguments from a reply (``response.json()``)."""
    call = reply.json()["choices"][0]["message"]["tool_calls"][0]
    return call["id"], call["function"]["name"], call["function"]["arguments"]


def raw_floor(base_url: str, config: AgentConfig) -> Contender:
    """The floor: ``post`` of prepared JSON, ``response.json()``, ``model_validate_json``."""
    client = _client(base_url)
    body, opening = _floor_body(config)

    async def run() -> Review:
        messages = list(opening)
        for _ in range(2):
            response = await client.post(
                "/chat/completions", body={**body, "messages": messages}, cast_to=httpx2.Response
            )
            call_id, name, arguments = _floor_answer(response)
            try:
                return Review.model_validate_json(arguments)
            except ValidationError as exc:
                messages += _reask(call_id, name, arguments, exc)
        raise RuntimeError("the arguments were invalid twice")

    return Contender(FLOOR_NAME, run, client.close)


def raw_floor_sync(base_url: str, config: AgentConfig) -> SyncContender:
    """The floor with the synchronous ``OpenAI`` client (what a sync caller writes)."""
    client = openai.OpenAI(base_url=base_url, api_key=API_KEY)
    body, opening = _floor_body(config)

    def run() -> Review:
        messages = list(opening)
        for _ in range(2):
            response = client.post(
                "/chat/completions", body={**body, "messages": messages}, cast_to=httpx2.Response
            )
            call_id, name, arguments = _floor_answer(response)
            try:
                return Review.model_validate_json(arguments)
            except ValidationError as exc:
                messages += _reask(call_id, name, arguments, exc)
        raise RuntimeError("the arguments were invalid twice")

    return SyncContender(FLOOR_NAME + ", sync", run, client.close)


def raw_floor_sync_logged(
    base_url: str, config: AgentConfig, analytics: AnalyticsSink
) -> SyncContender:
    """The sync floor that also writes the four analytics lines of a run to ``analytics``.

    The same events agentshape writes for a run accepted on its first attempt (``run_started``,
    ``model_turn``, ``attempt``, ``run_completed``), through the same sink: what the default
    log costs on top of the floor, with no run loop around it.
    """
    client = openai.OpenAI(base_url=base_url, api_key=API_KEY)
    body, opening = _floor_body(config)
    agent_id, model, digest = config.id, f"openai:{MODEL}", "0" * 64

    def run() -> Review:
        run_id = uuid.uuid4().hex
        ids = {"run_id": run_id, "agent_id": agent_id}
        analytics.emit(
            RunStartedEvent(
                **ids, model=model, output_mode="tool", schema_hash=digest, max_retries=1
            )
        )
        started = time.perf_counter()
        response = client.post(
            "/chat/completions", body={**body, "messages": list(opening)}, cast_to=httpx2.Response
        )
        latency_ms = (time.perf_counter() - started) * 1000
        reply = response.json()
        call = reply["choices"][0]["message"]["tool_calls"][0]
        tokens = reply.get("usage") or {}
        usage = Usage(
            input_tokens=tokens.get("prompt_tokens", 0),
            output_tokens=tokens.get("completion_tokens", 0),
            requests=1,
        )
        analytics.emit(
            ModelTurnEvent(
                **ids,
                step=1,
                model=model,
                usage=usage,
                latency_ms=latency_ms,
                stop_reason=reply["choices"][0]["finish_reason"],
                tool_calls=[call["function"]["name"]],
            )
        )
        arguments = call["function"]["arguments"]
        review = Review.model_validate_json(arguments)
        analytics.emit(
            AttemptEvent(**ids, number=1, mode="tool", schema_hash=digest, raw_output=arguments)
        )
        duration_ms = (time.perf_counter() - started) * 1000
        analytics.emit(
            RunCompletedEvent(
                **ids, usage=usage, duration_ms=duration_ms, attempts=1, retries=0, model=model
            )
        )
        return review

    return SyncContender(FLOOR_NAME + ", sync, JSONL log", run, client.close)


def agentshape_sync(
    base_url: str, config: AgentConfig, analytics: AnalyticsSink, label: str
) -> SyncContender:
    """agentshape: ``Agent.run_sync`` with an ``OpenAIProvider`` for the server."""
    provider = OpenAIProvider(MODEL, base_url=base_url, api_key=API_KEY)
    agent: Agent[BaseModel] = Agent(config, model=provider, analytics=analytics)

    def run() -> BaseModel:
        return agent.run_sync(TASK).output

    return SyncContender(label, run, lambda: None)


def agentshape(
    base_url: str, config: AgentConfig, analytics: AnalyticsSink, label: str
) -> Contender:
    """agentshape: ``Agent.run`` with an ``OpenAIProvider`` for the server."""
    provider = OpenAIProvider(MODEL, base_url=base_url, api_key=API_KEY)
    agent: Agent[BaseModel] = Agent(config, model=provider, analytics=analytics)

    async def run() -> BaseModel:
        result = await agent.run(TASK)
        return result.output

    async def close() -> None:
        """Nothing to close: the provider's pooled client closes with its event loop."""

    return Contender(label, run, close)


def agentshape_stream(
    base_url: str, config: AgentConfig, analytics: AnalyticsSink, label: str
) -> Contender:
    """agentshape: ``Agent.run_stream``, iterated to its ``RunFinished`` event."""
    provider = OpenAIProvider(MODEL, base_url=base_url, api_key=API_KEY)
    agent: Agent[BaseModel] = Agent(config, model=provider, analytics=analytics)

    async def run() -> BaseModel | None:
        result = None
        async for event in agent.run_stream(TASK):
            if isinstance(event, RunFinished):
                result = event.result
        if result is None:
            raise AssertionError("the stream ended without a RunFinished event")
        return result.output

    async def close() -> None:
        """Nothing to close: the provider's pooled client closes with its event loop."""

    return Contender(label, run, close)


def instructor_tools(base_url: str, config: AgentConfig) -> Contender:
    """instructor in tools mode; ``max_retries=2`` allows one re-ask."""
    import instructor

    raw = _client(base_url)
    client = instructor.from_openai(raw, mode=instructor.Mode.TOOLS)
    system = config.system_prompt

    async def run() -> Review:
        review: Review = await client.chat.completions.create(
            model=MODEL,
            response_model=Review,
            max_retries=2,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": TASK}],
        )
        return review

    return Contender("instructor (tools)", run, raw.close)


def pydantic_ai_tool(base_url: str, config: AgentConfig) -> Contender:
    """pydantic-ai with tool output named ``submit_result`` (its default retries: one)."""
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.output import ToolOutput
    from pydantic_ai.providers.openai import OpenAIProvider as PydanticOpenAIProvider

    raw = _client(base_url)
    model = OpenAIChatModel(MODEL, provider=PydanticOpenAIProvider(openai_client=raw))
    agent = PydanticAgent(
        model,
        output_type=ToolOutput(Review, name="submit_result"),
        system_prompt=config.system_prompt,
    )

    async def run() -> Review:
        result = await agent.run(TASK)
        return result.output

    return Contender("pydantic-ai (tool output)", run, raw.close)
