from __future__ import annotations

import agent_executor._run  # noqa: F401  (registers the executor's prompt cache too)
from agent_contracts import AgentConfig
from agent_core import clear_caches, model_from_schema
from agent_core._caches import cache_sizes, reserve_caches, schema_cache
from agent_executor import Agent, NullAnalytics


def test_clear_caches_empties_every_registered_cache() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    model_from_schema(schema)
    config = AgentConfig.model_validate({"name": "a", "output_schema": schema})
    assert Agent(config, model="test", analytics=NullAnalytics(), env={}).run_sync("go").ok
    filled = cache_sizes()
    for name in (
        "agent_core.compiled_schemas",
        "agent_core.models",
        "agent_core.contracts",
        "agent_executor.system_prompts",
    ):
        assert filled[name] > 0, name

    clear_caches()

    assert set(cache_sizes().values()) == {0}


def test_a_cache_keeps_at_most_its_size_dropping_the_least_recent() -> None:
    cache = schema_cache("tests.small", 2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_reserve_caches_grows_every_cache_and_never_shrinks_one() -> None:
    small = schema_cache("tests.reserve_small", 2)
    large = schema_cache("tests.reserve_large", 5000)
    reserve_caches(300)
    for n in range(300):
        small.put(n, n)
    assert len(small) == 300 and small.get(0) == 0
    assert large.size == 5000
