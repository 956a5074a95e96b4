"""Run agents on an ``agentshape serve`` service from Python, typed.

Start a service in a folder holding an ``agents/`` fleet (examples/fleet has one), then:

    agentshape serve --port 8610 --model test &
    python examples/service_client.py http://127.0.0.1:8610
"""

from __future__ import annotations

import sys

from pydantic import BaseModel

from agentshape import Client, RunEnded, SchemaNotFoundError


class Summary(BaseModel):
    """The summarizer's contract as a class: the agent's own schema, read into this."""

    title: str
    points: list[str]


def main(url: str) -> None:
    """Start a session, resume it, stream a run and use the schema registry."""
    with Client(url) as client:
        print("agents:", [agent.name for agent in client.agents.list()])
        result = client.start_session(
            "summarizer", "Summarize: the build is red.", output_type=Summary
        )
        summary: Summary = result.output  # validated by the service, and into Summary here
        print("completed:", result.status, f"title={summary.title!r} points={len(summary.points)}")
        again = client.resume_session(result.session_id, "Shorter, please.")
        print("resumed:", again.status)

        client.schemas.create("summary", Summary, replace=True)
        try:
            client.schemas.get("sumary")
        except SchemaNotFoundError as error:
            print("refused:", error)

        started = client.start_session("summarizer", "Summarize it again.", wait=False)
        for event in client.events(started.run_id):
            if isinstance(event, RunEnded):
                print("ended:", event.status)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8610")
