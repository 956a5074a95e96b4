"""Each package's public API is exactly its sorted ``__all__``, and every name is documented."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
import textwrap

import pytest

PACKAGES = [
    "agent_contracts",
    "agent_core",
    "agent_executor",
    "agent_coordinator",
    "agentshape",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_unique_and_importable(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(package.__all__)
    assert len(exported) == len(set(exported))
    missing = [item for item in exported if not hasattr(package, item)]
    assert missing == []


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_class_and_function_has_a_docstring(name: str) -> None:
    package = importlib.import_module(name)
    undocumented = [
        item
        for item in package.__all__
        if (inspect.isclass(obj := getattr(package, item)) or inspect.isfunction(obj))
        and not (obj.__doc__ or "").strip()
    ]
    assert undocumented == []


def test_headline_names_are_exported() -> None:
    import agent_contracts
    import agent_core
    import agent_executor

    assert {"AgentConfig", "RunResult", "RunOptions", "OutputValidationError"} <= set(
        agent_contracts.__all__
    )
    assert {"model_from_schema", "validate_output", "extract_json", "build_output_tool"} <= set(
        agent_core.__all__
    )
    assert {"Agent", "run_many", "format_child_result", "TestModel"} <= set(agent_executor.__all__)


def test_agentshape_is_the_one_import_a_user_writes() -> None:
    import agentshape

    assert {
        "Agent",
        "AgentConfig",
        "AgentResult",
        "RunRequest",
        "RunOptions",
        "RunResult",
        "RunFailedError",
        "SchemaNotFoundError",
        "run_many",
        "__version__",
    } <= set(agentshape.__all__)
    assert {
        "Client",
        "AsyncClient",
        "SessionResult",
        "APIError",
        "APIConnectionError",
        "InputValidationError",
        "OutputValidationError",
    } <= set(agentshape.__all__)
    for name in agentshape.__all__:
        if name == "__version__":
            continue
        obj = getattr(agentshape, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            # re-exported, never redefined; the service's client is agentshape's own
            assert obj.__module__.split(".")[0] in {
                "agent_contracts",
                "agent_core",
                "agent_executor",
            } or obj.__module__.startswith("agentshape._")


def test_the_service_client_is_imported_only_when_first_used() -> None:
    code = (
        "import sys, agentshape; assert 'agentshape._client' not in sys.modules; "
        "assert 'httpx2' not in sys.modules; agentshape.Client; "
        "assert 'agentshape._client' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_version_is_the_installed_distribution_version() -> None:
    from importlib.metadata import version

    import agentshape

    assert agentshape.__version__ == version("agentshape")


def _raises_itself(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function's own body (not a nested function's) has a ``raise``."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Raise):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return False


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_function_documents_its_args_returns_and_raises(name: str) -> None:
    """Google-style sections: Args when it takes any, Returns unless it returns None, Raises
    when its own body raises."""
    package = importlib.import_module(name)
    missing = []
    for item in package.__all__:
        obj = getattr(package, item)
        if not inspect.isfunction(obj):
            continue
        node = ast.parse(textwrap.dedent(inspect.getsource(obj))).body[0]
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        doc = obj.__doc__ or ""
        parameters = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        if (parameters or node.args.vararg or node.args.kwarg) and "Args:" not in doc:
            missing.append(f"{item}: Args")
        returns_none = isinstance(node.returns, ast.Constant) and node.returns.value is None
        if not returns_none and "Returns:" not in doc and "Yields:" not in doc:
            missing.append(f"{item}: Returns")
        if _raises_itself(node) and "Raises:" not in doc:
            missing.append(f"{item}: Raises")
    assert missing == []
