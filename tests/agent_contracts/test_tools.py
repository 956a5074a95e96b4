from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agent_contracts._tools import ToolChoice


def test_the_same_choice_is_the_same_frozen_object() -> None:
    assert ToolChoice.tool("submit_result") is ToolChoice.tool("submit_result")
    assert ToolChoice.required() is ToolChoice.required()
    assert ToolChoice.tool("a") != ToolChoice.tool("b")
    assert ToolChoice.tool("a") == ToolChoice(mode="tool", tool_name="a")
    assert ToolChoice.auto().model_fields_set == {"mode"}
    with pytest.raises(ValidationError):
        ToolChoice.tool("a").mode = "none"  # type: ignore[misc]


def test_a_choice_that_is_not_a_choice_is_refused() -> None:
    name: Any = ["submit_result"]
    with pytest.raises(ValidationError, match="tool_name"):
        ToolChoice.tool(name)
    with pytest.raises(ValidationError, match="tool_name is required"):
        ToolChoice(mode="tool")
