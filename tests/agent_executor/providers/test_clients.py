from __future__ import annotations

import asyncio

import pytest

from agent_executor._providers.clients import LoopClients


class Client:
    """A stand-in client that records whether it was closed."""

    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def test_one_client_per_loop_and_key_closed_when_the_loop_shuts_down() -> None:
    clients: LoopClients[Client] = LoopClients()
    made: list[Client] = []

    def make() -> Client:
        made.append(Client())
        return made[-1]

    async def use() -> tuple[Client | None, Client | None, Client | None]:
        first = await clients.get("a", make)
        again = await clients.get("a", make)
        other = await clients.get("b", make)
        assert first is not None
        assert first.closed is False
        return first, again, other

    first, again, other = asyncio.run(use())
    second_loop, _, _ = asyncio.run(use())

    assert first is again is made[0]
    assert other is made[1]
    assert second_loop is made[2]
    assert len(made) == 4
    assert all(client.closed for client in made)


def test_without_a_running_loop_no_client_is_kept() -> None:
    clients: LoopClients[Client] = LoopClients()
    made: list[Client] = []

    def make() -> Client:
        made.append(Client())
        return made[-1]

    # A coroutine driven by hand has no running loop: nothing would close a kept client.
    coroutine = clients.get("k", make)
    with pytest.raises(StopIteration) as stopped:
        coroutine.send(None)

    assert stopped.value.value is None
    assert made == []
