from __future__ import annotations

import pytest

from agent_contracts import ConfigError
from agent_core import ToolNameMap, provider_tool_name


def test_one_map_for_the_wire_and_for_show() -> None:
    names = ToolNameMap(["fs:read", "fs_read", "submit_result"])

    assert names.provider_name("fs:read") == "fs_read_2"
    assert names.to_wire("fs:read") == "fs_read_2"
    assert names.from_wire("fs_read_2") == names.original_name("fs_read_2") == "fs:read"
    assert names.to_wire("not-mapped") == "not-mapped"  # lenient on the wire
    assert names.from_wire("unknown") == "unknown"
    with pytest.raises(ConfigError, match="not in the tool name map"):
        names.provider_name("not-mapped")  # strict where a caller expects the name


def test_the_spelling_depends_on_the_set_not_the_order() -> None:
    names = ["b:x", "b_x", "a:x", "b_x_2"]
    forward, backward = ToolNameMap(names), ToolNameMap(reversed(names))

    assert dict(forward.items()) == dict(backward.items())
    assert forward.provider_name("b:x") == "b_x_3"


def test_long_names_stay_within_64_characters() -> None:
    long_a, long_b = "x:" + "a" * 70 + ":1", "x:" + "a" * 70 + ":2"
    names = ToolNameMap([long_a, long_b])

    spelled = {names.provider_name(long_a), names.provider_name(long_b)}
    assert len(spelled) == 2
    assert all(provider_tool_name(name) == name and len(name) <= 64 for name in spelled)
