"""The coordinator's place in the layers, its public names and its module sizes."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    "agent_coordinator",
    "agent_coordinator._api",
    "agent_coordinator._service",
    "agent_coordinator._store",
]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", ["agent_contracts", "agent_core", "agent_executor"])
def test_no_library_layer_imports_the_coordinator(layer: str) -> None:
    users = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / layer).rglob("*.py"))
        if any(name.startswith("agent_coordinator") for name in _imports(path))
    ]
    assert users == []


def test_the_library_agent_is_called_from_execution_only() -> None:
    callers = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "agent_coordinator").rglob("*.py"))
        if {"agent_executor._agent", "agent_core._contract"} & _imports(path)
    ]
    assert callers == ["agent_coordinator/_execution.py"]


def test_the_service_layer_and_the_mcp_server_never_import_the_http_api() -> None:
    shared = [ROOT / "agent_coordinator" / "_mcp_server.py"]
    shared += sorted((ROOT / "agent_coordinator" / "_service").rglob("*.py"))
    users = [
        str(path.relative_to(ROOT))
        for path in shared
        if any(name.startswith("agent_coordinator._api") for name in _imports(path))
    ]
    assert users == []


def test_only_the_app_mounts_the_mcp_server_and_no_router_imports_another() -> None:
    api = sorted((ROOT / "agent_coordinator" / "_api").rglob("*.py"))
    routers = {
        f"agent_coordinator._api.{path.stem}"
        for path in api
        if "APIRouter(" in path.read_text(encoding="utf-8")
    }
    mounting = [
        str(path.relative_to(ROOT))
        for path in api
        if "agent_coordinator._mcp_server" in _imports(path)
    ]
    assert mounting == ["agent_coordinator/_api/app.py"]
    crossing = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & routers)
        for path in api
        if path.name != "app.py" and _imports(path) & routers
    }
    assert crossing == {}


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_unique_importable_and_documented(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(getattr(module, "__all__", []))
    assert len(exported) == len(set(exported))
    undocumented = [
        item
        for item in exported
        if (inspect.isclass(obj := getattr(module, item)) or inspect.isfunction(obj))
        and not (obj.__doc__ or "").strip()
    ]
    assert undocumented == []
