from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest

from agent_contracts import ConfigError, InvalidSchemaError, SchemaReferenceError
from agent_core import compile_schema, register_schema, registered_schemas, unregister_schema

BASE = "https://schemas.agentshape.test/refs"


@pytest.fixture
def registry() -> Iterator[list[str]]:
    """Collect URIs a test registers and unregister them afterwards."""
    uris: list[str] = []
    yield uris
    for uri in uris:
        unregister_schema(uri)


def test_registered_document_resolves_a_remote_ref(registry: list[str]) -> None:
    uri = f"{BASE}/money.json"
    registry.append(uri)
    register_schema(uri, {"definitions": {"cents": {"type": "integer", "minimum": 0}}})
    compiled = compile_schema({"properties": {"price": {"$ref": f"{uri}#/definitions/cents"}}})
    assert compiled.is_valid({"price": 250})
    assert [str(issue) for issue in compiled.issues({"price": -1})] == [
        "$.price: -1 is less than the minimum of 0"
    ]


def test_unregistered_remote_ref_names_the_reference() -> None:
    ref = f"{BASE}/nowhere.json#/definitions/a"
    with pytest.raises(SchemaReferenceError) as caught:
        compile_schema({"properties": {"a": {"$ref": ref}}}, source="agents/reviewer.yml")
    assert caught.value.reference == ref
    message = str(caught.value)
    assert message.startswith("agents/reviewer.yml: cannot resolve $ref")
    assert f"'{BASE}/nowhere.json' is not registered" in message
    assert "register_schema" in message


def test_unregister_makes_the_reference_fail_again(registry: list[str]) -> None:
    uri = f"{BASE}/flag.json"
    registry.append(uri)
    register_schema(uri, {"type": "boolean"})
    schema = {"items": {"$ref": uri}}
    assert compile_schema(schema).is_valid([True])
    unregister_schema(uri)
    with pytest.raises(SchemaReferenceError) as caught:
        compile_schema(schema)
    assert caught.value.reference == uri


def test_reregistering_recompiles_schemas_that_used_the_document(registry: list[str]) -> None:
    uri = f"{BASE}/id.json"
    registry.append(uri)
    register_schema(uri, {"type": "integer"})
    schema = {"$ref": uri}
    assert compile_schema(schema).is_valid(7)
    register_schema(uri, {"type": "string"})
    recompiled = compile_schema(schema)
    assert not recompiled.is_valid(7)
    assert recompiled.is_valid("seven")


def test_bare_name_matches_a_relative_ref(registry: list[str]) -> None:
    registry.append("common.json")
    register_schema("common.json", {"definitions": {"name": {"type": "string"}}})
    compiled = compile_schema({"$ref": "common.json#/definitions/name"})
    assert compiled.is_valid("ada")
    assert not compiled.is_valid(3)


def test_registry_keeps_its_own_copies(registry: list[str]) -> None:
    uri = f"{BASE}/copied.json#"
    registry.append(uri)
    original = {"type": "string", "enum": ["a"]}
    register_schema(uri, original)
    original["enum"].append("b")
    listed = registered_schemas()
    assert listed[f"{BASE}/copied.json"] == {"type": "string", "enum": ["a"]}
    listed[f"{BASE}/copied.json"] = {"type": "integer"}
    assert registered_schemas()[f"{BASE}/copied.json"] == {"type": "string", "enum": ["a"]}


def test_unregistering_an_unknown_uri_does_nothing() -> None:
    before = registered_schemas()
    unregister_schema(f"{BASE}/never-registered.json")
    assert registered_schemas() == before


@pytest.mark.parametrize("uri", ["", "   ", f"{BASE}/a.json#/definitions/x"])
def test_bad_uris_are_refused(uri: str) -> None:
    with pytest.raises(ConfigError):
        register_schema(uri, {})


def test_a_document_must_be_a_schema() -> None:
    with pytest.raises(InvalidSchemaError, match="must be a JSON object or a boolean"):
        register_schema(f"{BASE}/list.json", [1, 2])
    with pytest.raises(InvalidSchemaError, match="not JSON"):
        register_schema(f"{BASE}/nan.json", {"maximum": float("nan")})


def test_remote_ref_inside_a_registered_document_resolves_relative_to_it(
    registry: list[str],
) -> None:
    registry.extend([f"{BASE}/tree.json", f"{BASE}/leaf.json"])
    register_schema(f"{BASE}/leaf.json", {"type": "integer"})
    register_schema(f"{BASE}/tree.json", {"type": "array", "items": {"$ref": "leaf.json"}})
    compiled = compile_schema({"$ref": f"{BASE}/tree.json"})
    assert compiled.is_valid([1, 2])
    assert [str(issue) for issue in compiled.issues([1, "x"])] == [
        "$[1]: 'x' is not of type 'integer'"
    ]


class _Recorder(BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Recorder.requests.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def schema_server() -> Iterator[str]:
    """A loopback HTTP server that would serve any schema asked of it, and records requests."""
    _Recorder.requests = []
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_nothing_is_ever_fetched_over_the_network(schema_server: str) -> None:
    with pytest.raises(SchemaReferenceError):
        compile_schema({"$ref": f"{schema_server}/integer.json"})
    compiled = compile_schema({"$schema": f"{schema_server}/meta.json", "type": "string"})
    assert compiled.draft == 7
    assert compiled.is_valid("text")
    assert _Recorder.requests == []
