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
    "openai": {
        "agent_executor/_providers/openai.py",
    },
    "anthropic": {
        "agent_executor/_providers/anthropic.py",
        "agent_executor/_providers/anthropic_batches.py",  # Message Batches: the adapter's too
    },
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
    assert set(users) <= SDK_HOMES[sdk]


PROVIDER_NAMES = {"openai", "anthropic", "ollama", "vllm", "llamacpp", "compatible"}
DIALECT_NAMES = {"openai", "anthropic"}
DIALECT_HOMES = {
    "agent_contracts/_profiles.py",  # the ToolDialect type
    "agent_core/_dialects.py",  # compiling a schema to each dialect's rules
    "agent_core/_output_tool.py",  # submit_result in each dialect
    "agent_core/_contract.py",  # a contract's tool in its bound dialect
    "agent_executor/_cli/inspect.py",  # `show` titles each dialect's tool
}


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """Every string literal in code (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def test_no_module_outside_the_providers_names_a_provider() -> None:
    """What a model is sent is decided by its provider's profile, never by a provider's name.

    A provider name as a whole string literal is allowed only inside agent_executor/_providers/;
    ``openai`` and ``anthropic`` are also the names of two *tool dialects* (which JSON Schema
    rules a tool is compiled for), allowed as such in the few modules that compile or show them.
    """
    found = []
    for package in ("agent_contracts", "agent_core", "agent_executor", "agent_coordinator"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("agent_executor/_providers/"):
                continue
            allowed = DIALECT_NAMES if relative in DIALECT_HOMES else set()
            found += [
                f"{relative}:{line}: {text!r}"
                for line, text in _code_strings(path)
                if text.lower() in PROVIDER_NAMES - allowed
            ]
    assert found == []


def test_the_entry_points_stay_short() -> None:
    """``execute`` (the run loop) and ``Agent.run`` read in one screen, about 60 lines."""
    lengths = {}
    for relative, name in (
        ("agent_executor/_run.py", "execute"),
        ("agent_executor/_agent.py", "run"),
    ):
        tree = ast.parse((ROOT / relative).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                assert node.end_lineno is not None
                lengths[f"{relative}:{name}"] = node.end_lineno - node.lineno + 1
    assert len(lengths) == 2 and all(n <= 65 for n in lengths.values()), lengths
