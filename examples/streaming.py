"""Watch a run's output grow while the model writes, then get the validated result.

python examples/streaming.py                  # the offline test model, wrong once on purpose
python examples/streaming.py openai:gpt-4.1-mini
"""

from __future__ import annotations

import asyncio
import sys

from pydantic import BaseModel

from agentshape import Agent, PartialOutput, RetryStarted, RunFinished


class Verdict(BaseModel):
    """A bug report's triage."""

    summary: str
    severity: int
    labels: list[str]


async def watch(agent: Agent[Verdict]) -> Verdict:
    """Print each partial output and retry, and return the final ``Verdict``."""
    async for event in agent.run_stream("The login page returns 500 for every user."):
        if isinstance(event, PartialOutput):
            print("partial", event.attempt, event.value)
        elif isinstance(event, RetryStarted):
            print("retry after attempt", event.attempt, event.errors)
        elif isinstance(event, RunFinished):
            return event.result.output
    raise AssertionError("run_stream always ends with RunFinished")


def main(model: str) -> None:
    """Stream one run and print the verdict it ends with."""
    agent = Agent(output_type=Verdict, system_prompt="Judge the bug report.", model=model)
    verdict = asyncio.run(watch(agent))
    print("final", verdict.severity, verdict.labels)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "test:fail_first=invalid_arguments")
