from __future__ import annotations

import pytest

from agent_executor._cli.table import format_table


def test_columns_are_aligned_under_a_rule() -> None:
    table = format_table(("id", "name"), [["a", "Alpha"], ["beta", ""]])
    assert table.splitlines() == ["id    name", "----  -----", "a     Alpha", "beta"]


def test_rows_must_fit_the_header() -> None:
    with pytest.raises(ValueError):
        format_table(("id",), [["a", "extra"]])
