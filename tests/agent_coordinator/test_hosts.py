"""No web page can drive a local service: ``agentshape serve`` as a user starts it, over real HTTP.

A request for a ``Host`` the service does not answer to (what a page gets after DNS rebinding) is
421 on every route, ``/mcp`` included; a state-changing request a browser marks as cross-site is
403; curl-like clients (no ``Origin``) and the service's own pages are unaffected.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.agent_coordinator.harness import write_fleet
from tests.agent_coordinator.processes import Process, serve

RUN = {"agent_name": "writer", "prompt": "hi"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Process, str]]:
    root = tmp_path_factory.mktemp("hosts")
    write_fleet(root / "agents")
    # No runners: a run stays queued, so whether a cancel went through is read back afterwards.
    process, url = serve(root, str(root / "coordinator.db"), {}, "--workers", "0")
    try:
        yield process, url
    finally:
        assert process.stop() == 0


@pytest.fixture
def url(served: tuple[Process, str]) -> str:
    return served[1]


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1]


def test_the_banner_names_the_hosts_answered(served: tuple[Process, str]) -> None:
    process, _ = served
    assert process.read_until("hosts:") == "  hosts:    localhost, 127.0.0.1, ::1\n"


@pytest.mark.parametrize("path", ["/sessions", "/agents/writer/source", "/health", "/mcp"])
def test_a_foreign_host_is_refused_on_every_route(url: str, path: str) -> None:
    refused = httpx.get(f"{url}{path}", headers={"host": f"rebound.example:{_port(url)}"})
    assert refused.status_code == 421
    body = refused.json()
    assert body["error"] == "HostNotAllowed"
    assert body["status_code"] == 421
    assert "'rebound.example:" in body["message"]
    assert "--allowed-host rebound.example" in body["message"]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "LOCALHOST.", "[::1]"])
def test_the_loopback_names_are_answered(url: str, host: str) -> None:
    answer = httpx.get(f"{url}/sessions", headers={"host": f"{host}:{_port(url)}"})
    assert answer.status_code == 200, answer.text


def test_a_foreign_host_cannot_start_a_run(url: str) -> None:
    refused = httpx.post(f"{url}/runs", json=RUN, headers={"host": "rebound.example"})
    assert refused.status_code == 421
    assert httpx.get(f"{url}/runs", params={"agent_name": "writer"}).json()["items"] == []


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://attacker.example"},
        {"origin": "null"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site", "origin": "http://localhost:3000"},
        {"origin": "http://127.0.0.1:1"},  # another port on this machine is another origin
    ],
    ids=["other-origin", "null-origin", "sec-fetch-cross-site", "same-site", "other-port"],
)
def test_a_cross_site_form_cannot_cancel_a_run(url: str, headers: dict[str, str]) -> None:
    run = httpx.post(f"{url}/runs", json=RUN).json()
    # What a <form method=post> on another site sends: no body to speak of, the browser's marks.
    refused = httpx.post(
        f"{url}/runs/{run['run_id']}/cancel",
        content=b"",
        headers={"content-type": "application/x-www-form-urlencoded", **headers},
    )
    assert refused.status_code == 403
    body = refused.json()
    assert body["error"] == "CrossSiteRequest"
    assert body["status_code"] == 403
    assert httpx.get(f"{url}/runs/{run['run_id']}").json()["status"] == "queued"


def test_a_cross_site_page_cannot_rewrite_an_agent(url: str) -> None:
    source = httpx.get(f"{url}/agents/writer/source").json()
    refused = httpx.put(
        f"{url}/agents/writer/schemas/output_schema",
        json={"text": '{"type": "object"}', "version": source["version"]},
        headers={"origin": "http://attacker.example", "sec-fetch-site": "cross-site"},
    )
    assert refused.status_code == 403
    assert httpx.get(f"{url}/agents/writer/source").json()["text"] == source["text"]


def test_curl_and_the_services_own_pages_change_state_as_before(url: str) -> None:
    plain = httpx.post(f"{url}/runs", json=RUN).json()
    assert httpx.post(f"{url}/runs/{plain['run_id']}/cancel").status_code == 200
    own = {"origin": url, "sec-fetch-site": "same-origin"}
    page = httpx.post(f"{url}/runs", json=RUN, headers=own).json()
    assert httpx.post(f"{url}/runs/{page['run_id']}/cancel", headers=own).status_code == 200
    assert httpx.get(f"{url}/runs/{page['run_id']}").json()["status"] == "cancelled"
    # A cross-site GET is the browser's to keep from the page (no CORS); it is not refused.
    assert httpx.get(f"{url}/sessions", headers={"origin": "http://x.example"}).status_code == 200


def test_allowed_host_adds_a_name_and_its_pages(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    process, url = serve(
        tmp_path,
        str(tmp_path / "coordinator.db"),
        {},
        "--workers",
        "0",
        "--allowed-host",
        "agents.example.com:443",
        "--allowed-host",
        "Other.Example",
    )
    try:
        assert process.read_until("hosts:") == (
            "  hosts:    localhost, 127.0.0.1, ::1, agents.example.com, other.example\n"
        )
        for host in ("agents.example.com", "other.example:8600"):
            assert httpx.get(f"{url}/sessions", headers={"host": host}).status_code == 200
        assert httpx.get(f"{url}/sessions", headers={"host": "third.example"}).status_code == 421
        # Behind a proxy that rewrites Host, the dashboard's own page has the declared name.
        proxied = {"origin": "https://agents.example.com", "sec-fetch-site": "same-origin"}
        assert httpx.post(f"{url}/runs", json=RUN, headers=proxied).status_code == 202
    finally:
        assert process.stop() == 0


def test_allowed_host_star_answers_any_host_with_a_warning(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    process, url = serve(
        tmp_path, str(tmp_path / "coordinator.db"), {}, "--workers", "0", "--allowed-host", "*"
    )
    try:
        assert httpx.get(f"{url}/sessions", headers={"host": "any.example"}).status_code == 200
        refused = httpx.post(f"{url}/runs", json=RUN, headers={"origin": "http://any.example"})
        assert refused.status_code == 403  # cross-site changes stay refused
    finally:
        assert process.stop() == 0
    assert "--allowed-host '*' answers every Host name" in process.rest
    assert "DNS rebinding" in process.rest


def test_mcp_over_http_answers_the_same_names(tmp_path: Path) -> None:
    write_fleet(tmp_path / "agents")
    args = ["mcp", "--http", "--port", "0", "--workers", "0", "--allowed-host", "mcp.example"]
    process = Process([*args, "--database", str(tmp_path / "c.db")], cwd=tmp_path, env={})
    try:
        line = process.read_until("streamable HTTP on")
        url = line.split(" on ", 1)[1].split()[0].removesuffix("/mcp")
        assert process.read_until("hosts:") == (
            "  hosts:    localhost, 127.0.0.1, ::1, mcp.example\n"
        )
        refused = httpx.get(f"{url}/mcp", headers={"host": "rebound.example"}, timeout=30)
        assert refused.status_code == 421
        assert refused.json()["error"] == "HostNotAllowed"
        health = httpx.get(f"{url}/health", headers={"host": "mcp.example"}, timeout=30)
        assert health.status_code == 200
    finally:
        assert process.stop() == 0
