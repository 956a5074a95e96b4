"""The editor's endpoints against a real ``agentshape serve`` process, as a user runs it.

Schema text from a request is held to a budget (deep nesting and alias bombs refused with 413
before anything is built), is checked off the event loop (``/health`` answers while a large check
is in flight), and a save changes only the field it names, even when the file shares one YAML
node between two fields.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import serve

SHARED_YAML = """\
# Shared: one node, two fields.
id: {name}
system_prompt: You answer.   # kept
parameters_schema: &shared
  type: object
  properties:
    topic: {{type: string}}   # the topic
default_output_schema: *shared
"""
PARAMETERS_TEXT = """\
  type: object
  properties:
    topic: {type: string}   # the topic
"""
NEW_SCHEMA = (
    '{"type": "object", "required": ["answer"], '
    '"properties": {"topic": {"type": "string"}, "answer": {"type": "string"}}}'
)
TOPIC_SCHEMA = {"type": "object", "properties": {"topic": {"type": "string"}}}


def _alias_bomb(levels: int) -> str:
    """YAML of ``levels`` lists, each nine aliases of the one before: 9**levels values."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("editor")
    agents = write_fleet(root / "agents")
    for name in ("alias_side", "anchor_side"):
        (agents / name).mkdir()
        (agents / name / "agent.yml").write_text(SHARED_YAML.format(name=name))
    process, url = serve(root, str(root / "coordinator.db"), {}, "--model", "test")
    try:
        yield url
    finally:
        assert process.stop() == 0


def _check(url: str, text: str, fmt: str = "yaml") -> httpx.Response:
    return httpx.post(
        f"{url}/agents/check-schema-text",
        json={"text": text, "format": fmt, "kind": "output"},
        timeout=120,
    )


@pytest.mark.parametrize(
    ("text", "fmt", "limit"),
    [
        ("[" * 2000 + "]" * 2000, "yaml", "64 levels"),
        ("[" * 2000 + "]" * 2000, "json", "64 levels"),
        ("\t" + "[" * 2000 + "]" * 2000, "json", "64 levels"),  # JSON that YAML cannot read
        (_alias_bomb(6), "yaml", "100000 values"),
        (_alias_bomb(12), "yaml", "100000 values"),
    ],
    ids=["deep-yaml", "deep-json", "deep-json-not-yaml", "alias-bomb", "alias-bomb-huge"],
)
def test_schema_text_over_the_budget_is_refused_with_the_limit_named(
    url: str, text: str, fmt: str, limit: str
) -> None:
    refused = _check(url, text, fmt)
    assert refused.status_code == 413, refused.text
    body = refused.json()
    assert body["error"] == "SchemaTextTooLarge"
    assert limit in body["message"]
    assert body["details"][0]["path"] == "$.text"
    assert httpx.get(f"{url}/health", timeout=30).json() == {"status": "ok"}


def test_a_save_over_the_budget_is_refused_and_writes_nothing(url: str) -> None:
    source = httpx.get(f"{url}/agents/writer/source", timeout=30).json()
    refused = httpx.put(
        f"{url}/agents/writer/schemas/output_schema",
        json={"text": _alias_bomb(6), "format": "yaml", "version": source["version"]},
        timeout=120,
    )
    assert refused.status_code == 413
    assert refused.json()["error"] == "SchemaTextTooLarge"
    assert httpx.get(f"{url}/agents/writer/source", timeout=30).json()["text"] == source["text"]


def test_health_answers_while_a_large_check_is_in_flight(url: str) -> None:
    properties = "".join(
        f"  p{i}:\n    type: string\n    description: property {i} of a large schema\n"
        for i in range(5000)
    )
    text = "type: object\nproperties:\n" + properties
    answers: list[str] = []
    check = threading.Thread(target=lambda: answers.append(_check(url, text).text))
    check.start()
    # /health is asked again and again while the check runs; each answer that comes before the
    # check's shows the event loop was free. Several in a row rule out the few moments before
    # the check started.
    healthy_meanwhile = 0
    while check.is_alive():
        health = httpx.get(f"{url}/health", timeout=120)
        assert health.status_code == 200
        if check.is_alive():
            healthy_meanwhile += 1
    check.join()
    assert '"valid":true' in answers[0]
    assert healthy_meanwhile >= 3


def test_saving_the_alias_side_of_a_shared_node_leaves_the_other_field(url: str) -> None:
    _save_one_of_two_sharing_fields(url, "alias_side", "default_output_schema", "parameters_schema")


def test_saving_the_anchor_side_of_a_shared_node_leaves_the_other_field(url: str) -> None:
    _save_one_of_two_sharing_fields(
        url, "anchor_side", "parameters_schema", "default_output_schema"
    )


def _save_one_of_two_sharing_fields(url: str, agent: str, saved: str, other: str) -> None:
    source = httpx.get(f"{url}/agents/{agent}/source", timeout=30).json()
    answer = httpx.put(
        f"{url}/agents/{agent}/schemas/{saved}",
        json={"text": NEW_SCHEMA, "format": "json", "version": source["version"]},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["reloaded"] is True
    config = httpx.get(f"{url}/agents/{agent}", timeout=30).json()
    assert config[saved]["required"] == ["answer"]
    assert config[other] == TOPIC_SCHEMA
    text = answer.json()["text"]
    assert text.startswith("# Shared: one node, two fields.\n")
    assert "system_prompt: You answer.   # kept\n" in text
    assert PARAMETERS_TEXT in text  # the field not saved, as it was written
    again = httpx.get(f"{url}/agents/{agent}/source", timeout=30).json()
    assert again["schemas"][other] == TOPIC_SCHEMA
    assert again["schemas"][saved]["required"] == ["answer"]
