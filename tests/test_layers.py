"""The layers import one way (contracts <- core <- executor) and SDKs stay in their provider."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "agent_contracts": {"agent_core", "agent_executor", "openai", "anthropic", "jsonschema_rs"},
    "agent_core": {
        "agent_executor",
        "openai",
        "anthropic",
        "httpx",
        "requests",
        "socket",
        "http.client",
        "urllib.request",
    },
}
SDK_HOMES = {
    "openai": "agent_executor/providers/openai.py",
    "anthropic": "agent_executor/providers/anthropic.py",
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    # "a.b.c" also counts as importing "a" and "a.b".
    return {".".join(name.split(".")[:i]) for name in names for i in range(1, name.count(".") + 2)}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_inner_layers_never_import_outward(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & FORBIDDEN[package])
        for path in _modules(package)
        if _imports(path) & FORBIDDEN[package]
    }
    assert offenders == {}


@pytest.mark.parametrize("sdk", sorted(SDK_HOMES))
def test_provider_sdks_are_imported_only_in_their_adapter(sdk: str) -> None:
    users = [
        str(path.relative_to(ROOT))
        for package in ("agent_contracts", "agent_core", "agent_executor")
        for path in _modules(package)
        if sdk in _imports(path)
    ]
    assert users in ([], [SDK_HOMES[sdk]])
