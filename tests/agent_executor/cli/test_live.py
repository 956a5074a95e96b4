"""The in-place region, read off a terminal emulator's screen (pyte) as a person would see it."""

from __future__ import annotations

import io

import pyte

from agent_executor._cli.live import LiveRegion, fit_lines, paused, printable

COLUMNS, ROWS = 20, 6


class Terminal(io.StringIO):
    """A text stream whose writes land on an emulated screen (with the tty's \\n -> \\r\\n)."""

    def __init__(self, columns: int = COLUMNS, rows: int = ROWS) -> None:
        super().__init__()
        self.size = (columns, rows)
        self.screen = pyte.Screen(columns, rows)
        self.feed = pyte.Stream(self.screen)

    def write(self, text: str) -> int:
        self.feed.feed(text.replace("\n", "\r\n"))
        return len(text)

    def isatty(self) -> bool:
        return True

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]


def region_on(terminal: Terminal) -> LiveRegion:
    return LiveRegion(terminal, size=lambda: (COLUMNS, ROWS))


def test_show_replaces_what_was_drawn_and_close_leaves_nothing() -> None:
    terminal = Terminal()
    terminal.write("before\n")
    region = region_on(terminal)
    region.show('{\n  "a": 1\n}')
    assert terminal.lines()[:4] == ["before", "{", '  "a": 1', "}"]
    region.show("short")
    assert terminal.lines()[:4] == ["before", "short", "", ""]
    region.close()
    assert terminal.lines()[:3] == ["before", "", ""]
    terminal.write("final output\n")
    assert terminal.lines()[:3] == ["before", "final output", ""]


def test_a_closed_region_draws_nothing_more() -> None:
    terminal = Terminal()
    region = region_on(terminal)
    region.close()
    region.show("late")
    assert terminal.lines() == [""] * ROWS


def test_lines_paused_for_appear_above_the_region() -> None:
    terminal = Terminal()
    region = region_on(terminal)
    region.show("growing\noutput")
    with paused():
        terminal.write("retry: attempt 1\n")
    assert terminal.lines()[:3] == ["retry: attempt 1", "growing", "output"]
    region.close()
    assert terminal.lines()[:3] == ["retry: attempt 1", "", ""]


def test_long_lines_are_cut_and_only_the_last_rows_are_drawn() -> None:
    terminal = Terminal()
    region = region_on(terminal)
    text = "\n".join(f"line {n} " + "x" * 30 for n in range(10))
    region.show(text)
    shown = [line for line in terminal.lines() if line]
    assert len(shown) == ROWS - 1
    assert shown[0].startswith("line 5 ") and shown[-1].startswith("line 9 ")
    assert all(len(line) == COLUMNS - 1 and line.endswith("…") for line in shown)
    region.show("done")
    assert terminal.lines() == ["done"] + [""] * (ROWS - 1)


def test_a_models_escape_sequences_are_shown_not_obeyed() -> None:
    terminal = Terminal()
    region = region_on(terminal)
    region.show("a\x1b[2Jb\rc")
    assert terminal.lines()[0] == "a\\x1b[2Jb\\rc"
    assert printable("tab\there\nnext\x07") == "tab    here\nnext\\x07"


def test_fit_lines_counts_wide_characters_as_two_columns() -> None:
    assert fit_lines("中文中文中文", 8, 5) == ["中文中…"]
    assert fit_lines("", 8, 5) == []
    assert fit_lines("a\nb\nc", 8, 3) == ["b", "c"]
