from __future__ import annotations

import io

from agent_executor._cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    """A clock that moves on only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_on_a_terminal_the_bar_redraws_in_place() -> None:
    stream, clock = Terminal(), Clock()
    progress = Progress(4, stream, width=8, clock=clock)
    progress.start()
    clock.now += 10
    progress.advance()
    clock.now += 10
    progress.advance(failed=True)
    assert stream.getvalue() == (
        "\r[........] 0/4, 0:00 elapsed"
        "\r[##......] 1/4, 0:10 elapsed, ETA 0:30"
        "\r[####....] 2/4, 1 failed, 0:20 elapsed, ETA 0:20"
    )
    progress.advance()
    clock.now += 3600
    progress.advance()
    assert stream.getvalue().endswith("\r[########] 4/4, 1 failed, 1:00:20 elapsed\n")


def test_into_a_file_it_writes_a_line_about_every_tenth() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(40, stream, clock=clock)
    progress.start()
    for number in range(40):
        clock.now += 1
        progress.advance(failed=number == 0)
    lines = stream.getvalue().splitlines()
    expected = [
        f"{n}/40 done, 1 failed, 0:{n:02} elapsed, ETA 0:{40 - n:02}" for n in range(4, 40, 4)
    ]
    assert lines == [*expected, "40/40 done, 1 failed, 0:40 elapsed"]
    assert "\r" not in stream.getvalue()


def test_small_batches_report_every_run() -> None:
    stream = io.StringIO()
    progress = Progress(3, stream, interactive=False, clock=Clock())
    for _ in range(3):
        progress.advance()
    assert stream.getvalue().splitlines()[0].startswith("1/3 done, 0:00 elapsed")
    assert len(stream.getvalue().splitlines()) == 3
    assert (progress.done, progress.failed) == (3, 0)


def test_an_empty_batch_shows_nothing() -> None:
    stream = Terminal()
    Progress(0, stream).start()
    assert stream.getvalue() == ""
