"""Runs through provider batch APIs: the real SDKs over real HTTP against ``tests.fake_batches``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_contracts import AgentConfig, ConfigError
from agent_executor import Agent, AnthropicProvider, OpenAIProvider, Provider, run_many
from agent_executor._batching import Batcher, BatchProgress
from agent_executor._providers.batches import batch_api_for
from tests.fake_batches import FakeBatches, ItemFault, submit_reply

SCHEMA = {
    "type": "object",
    "required": ["score"],
    "properties": {"score": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}
TASKS = ["grade ok 1", "grade bad 2", "grade never 3", "grade lost 4", "grade boom 5"]


def _task(api: str, body: Any) -> tuple[str, int]:
    """Return the task a request is about and how many replies it already holds."""
    messages = body["messages"]
    first = messages[0] if api == "anthropic" else messages[1]
    content = first["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return text, sum(m["role"] == "assistant" for m in messages)


def grader(api: str, body: Any) -> Any:
    """Answer valid except: "bad" once invalid, "never" always invalid, "lost"/"boom" faults."""
    task, answered = _task(api, body)
    if "lost" in task:
        return ItemFault("expired")
    if "boom" in task:
        return ItemFault("error", "overloaded")
    score = -1 if "never" in task or ("bad" in task and answered == 0) else 7
    arguments: dict[str, Any] = {"score": score}
    if '"title"' in json.dumps(body["tools"]):  # the CLI tests' grader also asks for a title
        arguments["title"] = "An essay"
    return submit_reply(api, arguments, answered)


@pytest.fixture
def fake() -> Iterator[FakeBatches]:
    server = FakeBatches(grader, polls_to_end=3)
    try:
        yield server
    finally:
        server.close()


def agent() -> Agent[Any]:
    config = {"id": "grader", "system_prompt": "You grade essays.", "output_schema": SCHEMA}
    return Agent(AgentConfig.model_validate(config))


def provider(api: str, fake: FakeBatches) -> Provider:
    if api == "openai":
        return OpenAIProvider("gpt-test", api_key="sk-test", base_url=f"{fake.url}/v1")
    return AnthropicProvider("claude-test", api_key="sk-ant-test", base_url=fake.url)


def batcher(live: Provider, **kwargs: Any) -> Batcher:
    return Batcher(batch_api_for(live), live, poll_interval_s=0, **kwargs)


def canonical(body: bytes) -> str:
    return json.dumps(json.loads(body), sort_keys=True)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_batched_runs_send_the_live_bodies_and_re_ask_in_a_follow_up_batch(
    api: str, fake: FakeBatches
) -> None:
    live = provider(api, fake)
    polls: list[BatchProgress] = []
    batched = await run_many(agent(), TASKS, batch=batcher(live, on_progress=polls.append))
    live_results = await run_many(agent(), TASKS[:3], model=live, escalate=False)

    # What a batch item carries is what the live call sent, first requests and re-asks alike:
    # byte for byte on OpenAI (the JSONL line holds the body's bytes), as JSON on Anthropic
    # (the SDK serialises the params inside the batch request).
    items = fake.item_bodies()
    sent_live = fake.live_bodies
    if api == "openai":
        assert sorted(b for b in items if b"lost" not in b and b"boom" not in b) == sorted(
            sent_live
        )
    else:
        wanted = sorted(canonical(b) for b in sent_live)
        assert (
            sorted(canonical(b) for b in items if b"lost" not in b and b"boom" not in b) == wanted
        )
    assert any(b"output-validation-error" in body for body in items)

    # One batch of every opening call, then one follow-up batch of the re-asks (one retry).
    assert [len(batch.items) for batch in fake.batches] == [5, 2]
    assert polls[0].status.ended is False and polls[0].round == 1
    assert polls[-1].status.ended is True

    ok, bad, never, lost, boom = (r.result for r in batched)
    assert (ok.status, ok.result_data, ok.retries) == ("completed", {"score": 7}, 0)
    assert (bad.status, bad.result_data, bad.retries) == ("completed", {"score": 7}, 1)
    assert bad.usage.requests == 2 and bad.usage.input_tokens == 40
    assert never.error is not None and never.error.type == "output_schema_validation_failed"
    assert never.error.last_output == {"score": -1} and never.error.validation_errors
    assert lost.error is not None and lost.error.type == "provider_batch_item_expired"
    assert boom.error is not None and boom.error.type == "provider_batch_item_failed"
    assert "overloaded" in boom.error.message
    # The judged outcomes are the live runs' own.
    for one, other in zip(batched, live_results, strict=False):
        assert (one.result.status, one.result.result_data, one.result.retries) == (
            other.result.status,
            other.result.result_data,
            other.result.retries,
        )
        assert one.result.error == other.result.error or (
            one.result.error is not None
            and other.result.error is not None
            and one.result.error.type == other.result.error.type
        )


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_batch_that_fails_whole_fails_every_item_typed(api: str, fake: FakeBatches) -> None:
    fake.fail_batches = True
    results = await run_many(agent(), TASKS[:2], batch=batcher(provider(api, fake)))
    for outcome in results:
        error = outcome.result.error
        assert error is not None and error.type == "provider_batch_failed"
        assert fake.batches[0].id in error.message


async def test_an_interrupted_batch_is_re_attached_and_paid_once(
    fake: FakeBatches, tmp_path: Path
) -> None:
    state = tmp_path / "results.jsonl.batches"
    live = provider("openai", fake)
    fake.polls_to_end = 10**9  # the provider never finishes while the first process waits
    polled = asyncio.Event()
    first = batcher(live, state_path=state, on_progress=lambda progress: polled.set())
    keys = [f"task-{i}" for i in range(3)]
    running = asyncio.ensure_future(run_many(agent(), TASKS[:3], batch=first, keys=keys))
    await asyncio.wait_for(polled.wait(), timeout=60)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    recorded = [json.loads(line) for line in state.read_text().splitlines()]
    assert [entry["batch_id"] for entry in recorded] == [fake.batches[0].id]

    fake.polls_to_end = 1
    again = batcher(live, state_path=state)
    results = await run_many(agent(), TASKS[:3], batch=again, keys=keys)
    assert [r.result.status for r in results] == ["completed", "completed", "failed"]
    # The first batch was read again, not sent again: only the re-asks are new batches.
    assert [len(batch.items) for batch in fake.batches] == [3, 2]
    assert len(state.read_text().splitlines()) == 2
    assert again.batch_ids["task-0"] == [fake.batches[0].id]
    assert again.batch_ids["task-1"] == [fake.batches[0].id, fake.batches[1].id]


async def test_agents_with_input_tools_are_refused() -> None:
    config = {
        "id": "reader",
        "system_prompt": "Read.",
        "output_schema": SCHEMA,
        "tools": ["fs:read"],
    }
    reader = Agent(AgentConfig.model_validate(config))
    with pytest.raises(ConfigError, match="--batch cannot run agents with input tools"):
        await run_many(reader, ["read it"], batch=True, model="test")


async def test_the_test_model_answers_a_batch_at_once() -> None:
    results = await run_many(agent(), ["one", "two"], batch=True, model="test")
    assert [r.result.status for r in results] == ["completed", "completed"]


def test_a_provider_without_a_batch_api_is_refused() -> None:
    class Other:
        name, model, supports_tools = "other", "m", True

        async def request(self, turn: Any) -> Any:
            raise AssertionError

    with pytest.raises(ConfigError, match="the other provider has no batch API"):
        batch_api_for(Other())  # type: ignore[arg-type]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_reply_that_cannot_be_read_fails_its_item_typed(
    api: str, fake: FakeBatches
) -> None:
    fake.responder = lambda kind, body: (
        {"nonsense": True} if "bad" in _task(kind, body)[0] else grader(kind, body)
    )
    ok, bad = await run_many(agent(), TASKS[:2], batch=batcher(provider(api, fake)))
    assert ok.result.status == "completed"
    assert bad.result.error is not None and bad.result.error.type == "provider_error"
    assert bad.result.error.message.startswith(f"{api}")


async def test_a_state_file_that_is_not_one_is_refused_naming_its_line(
    fake: FakeBatches, tmp_path: Path
) -> None:
    state = tmp_path / "results.jsonl.batches"
    state.write_text('{"batch_id": "batch_1", "items": {}}\nnot json\n')
    with pytest.raises(ConfigError, match=r"results.jsonl.batches, line 2: not a recorded batch"):
        batcher(provider("openai", fake), state_path=state)


class _LostLedger:
    """A ledger whose store is gone: nothing recorded, and no record can be written."""

    def recorded(self) -> dict[str, dict[str, str]]:
        return {}

    async def record(self, batch_id: str, provider: str, items: dict[str, str]) -> None:
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_batch_that_cannot_be_recorded_is_cancelled_and_its_runs_fail(
    api: str, fake: FakeBatches, caplog: pytest.LogCaptureFixture
) -> None:
    # Left running, a batch no ledger holds would be sent and paid for again by a resume.
    fake.polls_to_end = 10**9
    live = provider(api, fake)
    results = await run_many(agent(), TASKS[:2], batch=batcher(live, ledger=_LostLedger()))
    assert [r.result.status for r in results] == ["failed", "failed"]
    assert all(
        r.result.error is not None and "No space left on device" in r.result.error.message
        for r in results
    )
    assert [batch.cancelled for batch in fake.batches] == [True]
    assert f"batch {fake.batches[0].id} of {live.name} could not be recorded: cancelled" in (
        caplog.text
    )
