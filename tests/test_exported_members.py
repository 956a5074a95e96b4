"""Each package's public namespace is exactly its ``__all__`` (httpx's test_exported_members).

The rule: a package's ``__init__`` is its API, and every module under it is private
(``_name.py``, or inside a private subpackage). A private module keeps its own ``__all__``: it
lists what the other modules of the library may import from it (mypy --strict holds imports to
it), and is no promise to users. So the only ``__all__`` a user reads is a package's, and this
test holds it to what the package really offers: every name not starting with ``_`` that is
not a submodule, a name the package imports on first use (listed by its ``__dir__``)
included, and ``__version__`` where the package has one.
"""

from __future__ import annotations
import __future__

import importlib
import types
from pathlib import Path

import pytest

PACKAGES = ["agent_contracts", "agent_core", "agent_executor", "agent_coordinator", "agentshape"]


def _public_namespace(package: types.ModuleType) -> list[str]:
    names = {
        name
        for name in dir(package)
        if not name.startswith("_")
        and not isinstance(getattr(package, name), types.ModuleType)
        # `from __future__ import annotations` leaves a name behind; it is no export
        and not isinstance(getattr(package, name), __future__._Feature)
    }
    if hasattr(package, "__version__"):
        names.add("__version__")
    return sorted(names)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_exactly_the_public_namespace(name: str) -> None:
    package = importlib.import_module(name)
    assert sorted(package.__all__) == _public_namespace(package)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_module_under_the_package_is_private(name: str) -> None:
    package = importlib.import_module(name)
    assert package.__file__ is not None
    folder = Path(package.__file__).parent
    public = sorted(
        child.name
        for child in folder.iterdir()
        if not child.name.startswith("_")
        and (child.suffix == ".py" or (child / "__init__.py").exists())
    )
    assert public == []


def test_the_public_surface_stays_small() -> None:
    total = sum(len(importlib.import_module(name).__all__) for name in PACKAGES)
    assert total <= 300
