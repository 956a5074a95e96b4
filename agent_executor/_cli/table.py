"""Plain-text tables for the terminal: left-aligned columns, a header and a rule."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_table"]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Render rows as aligned columns under a header line and a rule of dashes.

    Args:
        headers: The column titles.
        rows: The cells, one sequence per row (as many cells as headers).

    Returns:
        The table, one line per row, without a trailing newline; trailing spaces are trimmed.
    """
    widths = [len(header) for header in headers]
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    rule = ["-" * width for width in widths]
    return "\n".join(line(cells).rstrip() for cells in [headers, rule, *rows])
