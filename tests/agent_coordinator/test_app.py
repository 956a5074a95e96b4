"""The app's one error body keeps HTTP's own parts, against a real ``agentshape serve`` process.

A 405 says which methods the path takes (``Allow``), and a request body nested past the JSON
parser's depth is a 400 that says so, never a 500.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import serve


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("app")
    write_fleet(root / "agents")
    process, url = serve(root, str(root / "coordinator.db"), {}, "--workers", "0")
    try:
        yield url
    finally:
        assert process.stop() == 0


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/health", {"GET"}),
        ("PUT", "/runs", {"GET", "POST"}),  # two routes on one path, both named
        ("GET", "/runs/run_x/cancel", {"POST"}),
        ("DELETE", "/sessions", {"GET"}),
    ],
)
def test_a_405_carries_allow(url: str, method: str, path: str, allowed: set[str]) -> None:
    answer = httpx.request(method, f"{url}{path}")
    assert answer.status_code == 405
    assert answer.json()["error"] == "MethodNotAllowed"
    assert {m.strip() for m in answer.headers["allow"].split(",")} - {"HEAD"} == allowed


@pytest.mark.parametrize("path", ["/runs", "/schemas", "/agents/validate-schema"])
def test_a_body_nested_past_the_parser_is_400_saying_so(url: str, path: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    body = f'{{"agent_name": "writer", "prompt": "x", "name": "n", "schema": {deep}}}'
    answer = httpx.post(
        f"{url}{path}", content=body, headers={"content-type": "application/json"}, timeout=60
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "BadRequest"
    assert answer.json()["message"] == (
        "the request body is nested deeper than the JSON parser allows"
    )
