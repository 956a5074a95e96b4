"""Test configuration: no real network, no provider settings leaking in, a scripted local LLM."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler.protocol import Scheduling

from tests.fake_llm import FakeLLM
from tests.strict_mypy import EXAMPLES, StrictMypy, client_programs, docs_programs
from tests.xdist_groups import GroupScheduling

_ENV_PREFIXES = ("OPENAI_", "ANTHROPIC_", "OLLAMA_", "AGENTSHAPE_")
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


class NetworkBlockedError(OSError):
    """A test tried to connect somewhere other than this machine."""


def _is_loopback(family: int, address: object) -> bool:
    if family not in (socket.AF_INET, socket.AF_INET6):
        return True  # Unix sockets and socket pairs stay on the machine
    host = address[0] if isinstance(address, tuple) and address else address
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _block_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if anything connects to a non-loopback address (the connect fails too)."""
    attempts: list[str] = []

    def guard(original: Callable[..., object]) -> Callable[..., object]:
        def connect(self: socket.socket, address: object) -> object:
            if not _is_loopback(self.family, address):
                attempts.append(repr(address))
                raise NetworkBlockedError(f"tests must not use the network: connect to {address!r}")
            return original(self, address)

        return connect

    monkeypatch.setattr(socket.socket, "connect", guard(socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guard(socket.socket.connect_ex))
    yield
    if attempts:
        pytest.fail(f"the test tried to reach the network: {', '.join(attempts)}")


@pytest.fixture(scope="session")
def _empty_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("no-provider-config")


@pytest.fixture(autouse=True)
def _isolate_provider_env(monkeypatch: pytest.MonkeyPatch, _empty_config_dir: Path) -> None:
    """Hide the developer's keys, base URLs, profiles and proxies from every test."""
    for name in list(os.environ):
        if name.upper().startswith(_ENV_PREFIXES) or name.upper() in _PROXY_VARIABLES:
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(_empty_config_dir))


@pytest.fixture(scope="session")
def strict_mypy(tmp_path_factory: pytest.TempPathFactory) -> StrictMypy:
    """One ``mypy --strict`` over the docs' examples, ``examples/`` and the client's programs."""
    directory = tmp_path_factory.mktemp("mypy")
    programs = [*docs_programs(directory), *client_programs(directory)]
    return StrictMypy([*programs, *sorted(EXAMPLES.glob("*.py"))], directory)


@pytest.fixture
def offline_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Name the offline test model as the default model (``AGENTSHAPE_MODEL=test``)."""
    monkeypatch.setenv("AGENTSHAPE_MODEL", "test")


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A scripted OpenAI/Anthropic-speaking server on 127.0.0.1, stopped after the test."""
    server = FakeLLM()
    try:
        yield server
    finally:
        server.close()


_SLOW_MODULES = frozenset(
    {
        "test_dashboard_browser",  # chromium
        "test_processes",  # `agentshape serve` and runners as processes
        "test_readme_shell",  # the README's and the docs' shell blocks, each in a process
        "test_readme_types",  # mypy --strict over the README's and the docs' examples
    }
)
"""Modules whose every test is slow (``python3 dev.py test --fast`` skips them)."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Scheduling | None:
    """Form the groups of ``--dist loadgroup`` from tests/xdist_groups.py."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tests: PostgreSQL, the browser, service processes (see ``_SLOW_MODULES``).

    In an xdist worker, also put the slow tests first: xdist hands the tests out in this order,
    so the last tests the two workers run are short ones and neither ends alone on a long one.
    """
    in_worker = hasattr(config, "workerinput")  # collecting in an xdist worker
    for item in items:
        module = item.path.stem
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and "postgres" in callspec.params.values()
        if on_postgres or module in _SLOW_MODULES or "chromium" in item.name:
            item.add_marker(pytest.mark.slow)
    if in_worker:
        # A stable sort: each module's tests keep their order (and a group stays together).
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
