"""``run-many --batch`` of many tasks against the local batch double (OpenAI's Batch API).

    PYTHONPATH=. .venv/bin/python bench/batches.py [--tasks 1000] [--turnaround 30]

``tests/fake_batches.py`` speaks the Batch API over real HTTP to the real SDK; every batch ends
at its second poll, and ``--turnaround`` seconds of provider time per batch are counted, not
slept (a real batch takes minutes to hours). One task in 20 is answered invalidly once and one
in 100 always, so the re-asks go out in a follow-up batch. Prints the requests sent, the batches,
the re-asked items, the wall time here and the wall time with the simulated turnaround.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The double lives with the tests; the script runs from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_executor._cli import main
from tests.fake_batches import FakeBatches

AGENT = """\
schema: kb.agent/1
id: grader
name: Grader
context:
  static:
    system: You grade essays.
output:
  schema:
    type: object
    required: [score]
    properties:
      score: { type: integer, minimum: 0 }
    additionalProperties: false
"""


def grader(api: str, body: Any) -> Any:
    """A valid grade, except for tasks marked ``bad`` (invalid once) and ``never`` (always)."""
    task = body["messages"][1]["content"]
    answered = sum(m["role"] == "assistant" for m in body["messages"])
    score = -1 if "never" in task or ("bad" in task and answered == 0) else 7
    call = {
        "id": f"call_{answered}",
        "type": "function",
        "function": {"name": "submit_result", "arguments": json.dumps({"score": score})},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129},
    }


def main_() -> None:
    """Run the benchmark and print its numbers."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--turnaround", type=float, default=30.0)
    args = parser.parse_args()
    fake = FakeBatches(grader, polls_to_end=2, turnaround_s=args.turnaround)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "agents" / "grader").mkdir(parents=True)
        (root / "agents" / "grader" / "agent.yml").write_text(AGENT)
        with (root / "tasks.jsonl").open("w") as tasks:
            for i in range(args.tasks):
                kind = "never" if i % 100 == 99 else "bad" if i % 20 == 7 else "ok"
                tasks.write(json.dumps({"id": f"t{i}", "task": f"grade {kind} essay {i}"}) + "\n")
        os.environ.update(OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=f"{fake.url}/v1")
        os.chdir(root)
        out, err = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(
                [
                    "run-many",
                    "grader",
                    "--tasks",
                    "tasks.jsonl",
                    "--out",
                    "results.jsonl",
                    "--model",
                    "openai:gpt-test",
                    "--batch",
                    "--batch-poll",
                    "0",
                    "--analytics-dir",
                    "analytics",
                ]
            )
        wall = time.perf_counter() - started
        rows = [json.loads(line) for line in (root / "results.jsonl").read_text().splitlines()]
    fake.close()
    rounds = len(fake.batches)  # one batch per round here: every round's batches run at once
    print(f"exit code {code}: {out.getvalue().strip()}")
    print(f"tasks: {args.tasks}, rows: {len(rows)}")
    print(f"requests sent (batch items): {fake.items_sent}")
    print(
        f"batches: {len(fake.batches)} ({', '.join(str(len(b.items)) for b in fake.batches)} items)"
    )
    print(f"re-asked items: {sum(len(b.items) for b in fake.batches[1:])}")
    print(f"wall time here: {wall:.1f} s")
    print(
        f"wall time with a {args.turnaround:.0f} s batch turnaround: "
        f"{wall + rounds * args.turnaround:.1f} s ({rounds} rounds)"
    )


if __name__ == "__main__":
    main_()
