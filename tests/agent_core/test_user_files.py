"""Files a user names: regular files only, within a cap; whole-file writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_core._user_files import read_user_file, writable_output, write_text_atomically


def test_reads_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"hello")
    assert read_user_file(tmp_path / "a.txt") == b"hello"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(OSError) as caught:
        read_user_file(tmp_path / "pipe")
    assert caught.value.strerror == "not a regular file (a FIFO, device or socket), so not read"


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(OSError) as caught:
        read_user_file(tmp_path / "big", max_bytes=100)
    assert caught.value.strerror == "larger than the 100 bytes cap, so not read"


def test_a_directory_and_a_missing_file_are_their_usual_errors(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_user_file(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_user_file(tmp_path / "missing")


def test_writable_output(tmp_path: Path) -> None:
    assert writable_output(tmp_path / "new.jsonl") is None
    (tmp_path / "old.jsonl").write_text("")
    assert writable_output(tmp_path / "old.jsonl") is None
    os.link(tmp_path / "old.jsonl", tmp_path / "twin.jsonl")
    assert writable_output(tmp_path / "twin.jsonl") == (
        "has 2 hard links, so it may be another file under a second name; name a file of its own"
    )
    assert writable_output(tmp_path) == "is a directory"
    os.mkfifo(tmp_path / "pipe")
    assert writable_output(tmp_path / "pipe") == "is not a regular file (a device, FIFO or socket)"


def test_write_text_atomically_replaces_the_whole_file_and_leaves_no_temporary(
    tmp_path: Path,
) -> None:
    target = tmp_path / "deep" / "page.html"
    write_text_atomically(target, "first")
    write_text_atomically(target, "second \udce9")
    assert target.read_text(encoding="utf-8") == "second \\udce9"
    assert sorted(p.name for p in target.parent.iterdir()) == ["page.html"]


def test_a_failed_atomic_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.write_text("old")
    with pytest.raises(TypeError):
        write_text_atomically(target, 42)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]
