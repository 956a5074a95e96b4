from __future__ import annotations

import io

from agent_executor.cli_progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_bar_redraws_in_place() -> None:
    stream = Terminal()
    progress = Progress(4, stream, width=8)
    progress.start()
    progress.advance()
    progress.advance(failed=True)
    assert stream.getvalue() == "\r[........] 0/4\r[##......] 1/4\r[####....] 2/4, 1 failed"
    progress.advance()
    progress.advance()
    assert stream.getvalue().endswith("\r[########] 4/4, 1 failed\n")


def test_into_a_file_it_writes_a_line_about_every_tenth() -> None:
    stream = io.StringIO()
    progress = Progress(40, stream)
    progress.start()
    for number in range(40):
        progress.advance(failed=number == 0)
    lines = stream.getvalue().splitlines()
    assert lines == [f"{n}/40 done, 1 failed" for n in range(4, 41, 4)]
    assert "\r" not in stream.getvalue()


def test_small_batches_report_every_run() -> None:
    stream = io.StringIO()
    progress = Progress(3, stream, interactive=False)
    for _ in range(3):
        progress.advance()
    assert stream.getvalue() == "1/3 done\n2/3 done\n3/3 done\n"
    assert (progress.done, progress.failed) == (3, 0)


def test_an_empty_batch_shows_nothing() -> None:
    stream = Terminal()
    Progress(0, stream).start()
    assert stream.getvalue() == ""
