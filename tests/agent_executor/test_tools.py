from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import JsonValue

from agent_contracts import ConfigError, ToolExecutionError
from agent_executor import KNOWN_TOOLS, FsLimits, InputTool, build_input_tools
from agent_executor._providers.base import ToolDefinition
from agent_executor._tools import FsList, FsRead, FsSearch, Workspace
from agent_executor._tools.base import RUN_DEADLINE

SECRET = "TOP-SECRET-VALUE"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with a few files, and a secret file just outside it."""
    (tmp_path / "secret.txt").write_text(f"{SECRET}\n")
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "README.md").write_text("# Demo\nhello world\n")
    (root / "src" / "main.py").write_text("def main():\n    print('hello')\n    return 0\n")
    (root / "src" / "pkg" / "util.py").write_text("HELLO = 1\n")
    (root / "docs" / "guide.txt").write_text("Hello guide\n")
    return root


def tool(root: Path, name: str, limits: FsLimits | None = None) -> InputTool:
    [built] = build_input_tools([name], workspace=root, limits=limits)
    return built


async def run(root: Path, name: str, arguments: JsonValue, limits: FsLimits | None = None) -> str:
    return await tool(root, name, limits).call(arguments)


async def refusal(root: Path, name: str, arguments: JsonValue) -> ToolExecutionError:
    with pytest.raises(ToolExecutionError) as caught:
        await run(root, name, arguments)
    assert caught.value.tool == name
    return caught.value


def finishes(work: Callable[[], str]) -> str:
    """Run ``work`` in a daemon thread so that a hang fails the test instead of freezing it."""
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(_capture(work)), daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert outcome, "the tool hung"
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    assert isinstance(result, str)
    return result


def _capture(work: Callable[[], str]) -> object:
    try:
        return work()
    except Exception as exc:
        return exc


# --- building tools -------------------------------------------------------------------------


def test_build_input_tools_returns_named_tools_in_order(workspace: Path) -> None:
    tools = build_input_tools(["fs:search", "fs:read", "fs:search"], workspace=workspace)
    assert [t.name for t in tools] == ["fs:search", "fs:read"]
    assert isinstance(tools[0], FsSearch)
    assert isinstance(tools[1], FsRead)


def test_namespace_wildcard_expands_to_every_fs_tool(workspace: Path) -> None:
    tools = build_input_tools(["fs:*"], workspace=workspace)
    assert (
        sorted(t.name for t in tools) == sorted(KNOWN_TOOLS) == ["fs:list", "fs:read", "fs:search"]
    )


def test_unknown_tool_name_suggests_the_closest_and_lists_known(workspace: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        build_input_tools(["fs:read", "fs:reed"], workspace=workspace)
    message = str(caught.value)
    assert "unknown input tool 'fs:reed'" in message
    assert "did you mean 'fs:read'?" in message
    assert "known tools: fs:list, fs:read, fs:search" in message


def test_unknown_tool_in_other_case_suggests_the_known_spelling(workspace: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"unknown input tool 'FS:READ' \(did you mean 'fs:read'\?\)"
    ):
        build_input_tools(["FS:READ"], workspace=workspace)


def test_unknown_tool_without_close_match_has_no_suggestion(workspace: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        build_input_tools(["mind:rag-query"], workspace=workspace)
    assert "did you mean" not in str(caught.value)
    assert "known tools: fs:list, fs:read, fs:search" in str(caught.value)


def test_missing_workspace_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        build_input_tools(["fs:read"], workspace=tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        Workspace(tmp_path / "file")


def test_definition_carries_name_description_and_parameters(workspace: Path) -> None:
    read = tool(workspace, "fs:read")
    definition = read.definition()
    assert isinstance(definition, ToolDefinition)
    assert definition.name == "fs:read"
    assert definition.description == read.description
    assert definition.parameters == read.parameters
    assert definition.parameters["required"] == ["path"]
    assert definition.parameters["additionalProperties"] is False


def test_tool_descriptions_state_the_configured_caps(workspace: Path) -> None:
    limits = FsLimits(read_bytes=123, list_entries=45, search_results=6)
    tools = {t.name: t for t in build_input_tools(["fs:*"], workspace=workspace, limits=limits)}
    assert "123 bytes" in tools["fs:read"].description
    assert "45 entries" in tools["fs:list"].description
    assert "at most 6" in tools["fs:search"].description


# --- argument validation --------------------------------------------------------------------


async def test_invalid_arguments_list_every_problem(workspace: Path) -> None:
    error = await refusal(workspace, "fs:read", {"pth": "README.md", "offset": 0})
    assert [str(issue) for issue in error.errors] == [
        "$: Additional properties are not allowed ('pth' was unexpected)",
        "$: 'path' is a required property",
        "$.offset: 0 is less than the minimum of 1",
    ]
    assert str(error).startswith("fs:read: invalid arguments\n  - $: ")


async def test_wrong_argument_type_names_the_field(workspace: Path) -> None:
    error = await refusal(workspace, "fs:list", {"recursive": "yes"})
    assert [issue.path for issue in error.errors] == ["$.recursive"]
    assert error.errors[0].keyword == "type"


async def test_arguments_must_be_an_object(workspace: Path) -> None:
    error = await refusal(workspace, "fs:search", ["hello"])
    assert error.message == "arguments must be a JSON object, not list"


async def test_null_arguments_count_as_none(workspace: Path) -> None:
    assert "README.md" in await run(workspace, "fs:list", None)


# --- fs:read --------------------------------------------------------------------------------


async def test_read_returns_file_text(workspace: Path) -> None:
    assert await run(workspace, "fs:read", {"path": "src/main.py"}) == (
        "def main():\n    print('hello')\n    return 0\n"
    )


async def test_read_offset_and_limit_select_lines_and_say_more_follow(workspace: Path) -> None:
    text = await run(workspace, "fs:read", {"path": "src/main.py", "offset": 2, "limit": 1})
    assert text == "    print('hello')\n[more lines follow: call fs:read with offset=3]"
    assert await run(workspace, "fs:read", {"path": "src/main.py", "offset": 3}) == "    return 0\n"


async def test_read_offset_past_the_end_is_refused(workspace: Path) -> None:
    error = await refusal(workspace, "fs:read", {"path": "src/main.py", "offset": 4})
    assert error.message == "offset 4 is past the end of 'src/main.py' (3 lines)"


async def test_read_byte_cap_cuts_at_a_line_and_says_where_to_continue(workspace: Path) -> None:
    lines = "".join(f"line {n}\n" for n in range(1, 101))  # 7 or 8 bytes a line
    (workspace / "long.txt").write_text(lines)
    text = await run(workspace, "fs:read", {"path": "long.txt"}, FsLimits(read_bytes=20))
    assert text == (
        "line 1\nline 2\n[truncated at the 20-byte cap after line 2: "
        "call fs:read with offset=3 to continue]"
    )
    rest = await run(workspace, "fs:read", {"path": "long.txt", "offset": 3, "max_bytes": 7})
    assert rest.startswith("line 3\n[truncated at the 7-byte cap after line 3:")


async def test_read_default_cap_is_64_kib(workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 99 + "\n" * 1 + ("y" * 99 + "\n") * 1000)
    text = await run(workspace, "fs:read", {"path": "big.txt"})
    body, notice = text.rsplit("\n[", 1)
    assert len(body.encode()) <= 64 * 1024
    assert notice.startswith("truncated at the 65536-byte cap after line 655:")


async def test_read_single_line_longer_than_cap_shows_its_start(workspace: Path) -> None:
    (workspace / "minified.js").write_text("a" * 50)
    text = await run(workspace, "fs:read", {"path": "minified.js", "max_bytes": 10})
    assert text == (
        "aaaaaaaaaa\n[truncated: line 1 is longer than the 10-byte cap; only its start is shown]"
    )


async def test_read_empty_file(workspace: Path) -> None:
    (workspace / "empty.txt").write_text("")
    assert await run(workspace, "fs:read", {"path": "empty.txt"}) == "(empty file)"


async def test_read_refuses_binary_files_with_their_size(workspace: Path) -> None:
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    error = await refusal(workspace, "fs:read", {"path": "logo.png"})
    assert error.message == "'logo.png' is a binary file (16 bytes): only text can be read"


async def test_read_refuses_directories_and_missing_files(workspace: Path) -> None:
    assert (await refusal(workspace, "fs:read", {"path": "src"})).message == (
        "'src' is a directory: use fs:list"
    )
    assert (await refusal(workspace, "fs:read", {"path": "nope.txt"})).message == (
        "no such file or directory: 'nope.txt'"
    )


async def test_read_follows_symlinks_that_stay_inside(workspace: Path) -> None:
    (workspace / "readme-link").symlink_to("README.md")
    assert await run(workspace, "fs:read", {"path": "readme-link"}) == "# Demo\nhello world\n"


# --- escapes --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fs:read", "fs:list", "fs:search"])
async def test_dotdot_escape_is_refused(workspace: Path, name: str) -> None:
    arguments: dict[str, JsonValue] = {"path": "../secret.txt"}
    if name == "fs:search":
        arguments["pattern"] = "SECRET"
    error = await refusal(workspace, name, arguments)
    assert error.message == "path '../secret.txt' leads outside the workspace"


async def test_dotdot_inside_a_path_is_refused_once_it_leaves(workspace: Path) -> None:
    error = await refusal(workspace, "fs:read", {"path": "src/../../secret.txt"})
    assert "leads outside the workspace" in error.message
    # A ``..`` that stays inside is just a path.
    assert await run(workspace, "fs:read", {"path": "src/../README.md"}) == "# Demo\nhello world\n"


@pytest.mark.parametrize("name", ["fs:read", "fs:list", "fs:search"])
async def test_absolute_paths_are_refused(workspace: Path, name: str) -> None:
    outside = str(workspace.parent / "secret.txt")
    arguments: dict[str, JsonValue] = {"path": outside}
    if name == "fs:search":
        arguments["pattern"] = "SECRET"
    error = await refusal(workspace, name, arguments)
    assert error.message.startswith(f"absolute path {outside!r} refused")
    assert (
        await refusal(workspace, name, {**arguments, "path": str(workspace)})
    ).message.startswith("absolute path")


async def test_symlink_to_outside_file_is_refused_by_read(workspace: Path) -> None:
    (workspace / "innocent.txt").symlink_to(workspace.parent / "secret.txt")
    error = await refusal(workspace, "fs:read", {"path": "innocent.txt"})
    assert error.message == "path 'innocent.txt' leads outside the workspace"
    assert SECRET not in str(error)


async def test_symlinks_to_outside_are_skipped_by_list_and_search(workspace: Path) -> None:
    (workspace / "innocent.txt").symlink_to(workspace.parent / "secret.txt")
    (workspace / "src" / "escape").symlink_to(workspace.parent)
    listing = await run(workspace, "fs:list", {"recursive": True})
    assert "innocent.txt" not in listing
    assert "escape" not in listing
    assert "[2 symlink(s) leading outside the workspace or nowhere skipped]" in listing
    found = await run(workspace, "fs:search", {"pattern": "SECRET"})
    assert SECRET not in found
    assert found.startswith("no matches for 'SECRET'")


async def test_path_through_symlinked_directory_to_outside_is_refused(workspace: Path) -> None:
    (workspace / "escape").symlink_to(workspace.parent)
    error = await refusal(workspace, "fs:read", {"path": "escape/secret.txt"})
    assert error.message == "path 'escape/secret.txt' leads outside the workspace"
    assert (await refusal(workspace, "fs:list", {"path": "escape"})).message == (
        "path 'escape' leads outside the workspace"
    )


async def test_symlink_directory_loop_does_not_make_walks_endless(workspace: Path) -> None:
    (workspace / "src" / "pkg" / "loop").symlink_to("..")  # points back at src/
    (workspace / "self").symlink_to("self")  # a link to itself
    listing = await run(workspace, "fs:list", {"recursive": True})
    assert listing.splitlines()[:8] == [
        "README.md",
        "docs/",
        "docs/guide.txt",
        "src/",
        "src/main.py",
        "src/pkg/",
        "src/pkg/loop/",
        "src/pkg/util.py",
    ]
    assert "[1 symlink(s) leading outside the workspace or nowhere skipped]" in listing
    found = await run(workspace, "fs:search", {"pattern": "HELLO"})
    assert found.splitlines()[0] == "src/pkg/util.py:1: HELLO = 1"
    error = await refusal(workspace, "fs:read", {"path": "self"})
    assert error.message == "path 'self' is a symlink loop"


async def test_nul_in_path_is_refused(workspace: Path) -> None:
    error = await refusal(workspace, "fs:read", {"path": "README.md\x00.txt"})
    assert "NUL" in error.message


# --- special files --------------------------------------------------------------------------


def test_fifo_does_not_hang_read_or_search(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    root = Workspace(workspace)
    read, search = FsRead(root), FsSearch(root)
    with pytest.raises(ToolExecutionError) as caught:
        finishes(lambda: read.execute({"path": "pipe"}))
    assert caught.value.message == (
        "'pipe' is not a regular file (a FIFO, socket or device): refused"
    )
    found = finishes(lambda: search.execute({"pattern": "x", "path": "pipe"}))
    assert found == "no matches for 'x'\n[1 special file(s) (FIFO, socket or device) skipped]"
    listing = finishes(lambda: FsList(root).execute({}))
    assert "pipe" not in listing
    assert "[1 special file(s) (FIFO, socket or device) skipped]" in listing


# --- fs:list --------------------------------------------------------------------------------


async def test_list_is_sorted_with_trailing_slash_for_directories(workspace: Path) -> None:
    assert await run(workspace, "fs:list", {}) == "README.md\ndocs/\nsrc/"
    assert await run(workspace, "fs:list", {"path": "src"}) == "src/main.py\nsrc/pkg/"


async def test_list_recursive_walks_depth_first_in_name_order(workspace: Path) -> None:
    assert await run(workspace, "fs:list", {"recursive": True}) == "\n".join(
        [
            "README.md",
            "docs/",
            "docs/guide.txt",
            "src/",
            "src/main.py",
            "src/pkg/",
            "src/pkg/util.py",
        ]
    )


async def test_list_cap_truncates_with_notice(workspace: Path) -> None:
    text = await run(workspace, "fs:list", {"recursive": True}, FsLimits(list_entries=3))
    assert text == (
        "README.md\ndocs/\ndocs/guide.txt\n"
        "[truncated after 3 entries: list a subdirectory or use fs:search to narrow]"
    )
    text = await run(workspace, "fs:list", {"recursive": True, "max_entries": 2})
    assert text.splitlines() == [
        "README.md",
        "docs/",
        "[truncated after 2 entries: list a subdirectory or use fs:search to narrow]",
    ]


async def test_list_of_a_file_or_empty_directory(workspace: Path) -> None:
    (workspace / "empty").mkdir()
    assert await run(workspace, "fs:list", {"path": "empty"}) == "(empty directory)"
    error = await refusal(workspace, "fs:list", {"path": "README.md"})
    assert error.message == "'README.md' is not a directory: use fs:read"


# --- fs:search ------------------------------------------------------------------------------


async def test_search_returns_path_line_and_text(workspace: Path) -> None:
    assert await run(workspace, "fs:search", {"pattern": r"hel+o"}) == (
        "README.md:2: hello world\nsrc/main.py:2:     print('hello')"
    )


async def test_search_ignore_case_and_path(workspace: Path) -> None:
    text = await run(workspace, "fs:search", {"pattern": "hello", "ignore_case": True})
    assert text.splitlines() == [
        "README.md:2: hello world",
        "docs/guide.txt:1: Hello guide",
        "src/main.py:2:     print('hello')",
        "src/pkg/util.py:1: HELLO = 1",
    ]
    assert await run(workspace, "fs:search", {"pattern": "HELLO", "path": "src/pkg/util.py"}) == (
        "src/pkg/util.py:1: HELLO = 1"
    )


async def test_search_literal_matches_regex_characters_as_text(workspace: Path) -> None:
    assert await run(workspace, "fs:search", {"pattern": "print('", "literal": True}) == (
        "src/main.py:2:     print('hello')"
    )
    assert await run(workspace, "fs:search", {"pattern": "d.f", "literal": True}) == (
        "no matches for 'd.f'"
    )


async def test_search_invalid_regex_suggests_literal(workspace: Path) -> None:
    error = await refusal(workspace, "fs:search", {"pattern": "print("})
    assert error.message.startswith("invalid regular expression: missing )")
    assert error.message.endswith("pass literal=true to search text")


async def test_search_glob_by_name_or_by_path(workspace: Path) -> None:
    by_name = await run(workspace, "fs:search", {"pattern": "(?i)hello", "glob": "*.py"})
    assert by_name.splitlines() == [
        "src/main.py:2:     print('hello')",
        "src/pkg/util.py:1: HELLO = 1",
    ]
    by_path = await run(workspace, "fs:search", {"pattern": "(?i)hello", "glob": "docs/*"})
    assert by_path == "docs/guide.txt:1: Hello guide"


async def test_search_cap_truncates_with_notice(workspace: Path) -> None:
    text = await run(workspace, "fs:search", {"pattern": "(?i)hello"}, FsLimits(search_results=2))
    assert text.splitlines() == [
        "README.md:2: hello world",
        "docs/guide.txt:1: Hello guide",
        "[truncated after 2 matches: narrow the pattern, path or glob]",
    ]
    text = await run(workspace, "fs:search", {"pattern": "(?i)hello", "max_results": 1})
    assert text.splitlines()[-1] == "[truncated after 1 matches: narrow the pattern, path or glob]"


async def test_search_shortens_long_lines(workspace: Path) -> None:
    (workspace / "wide.txt").write_text("needle " + "z" * 100 + "\n")
    text = await run(workspace, "fs:search", {"pattern": "needle"}, FsLimits(hit_chars=10))
    assert text == "wide.txt:1: needle zzz…"


async def test_search_skips_binary_and_oversized_files(workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"hello\x00world")
    (workspace / "huge.txt").write_text("hello\n" * 100)
    text = await run(workspace, "fs:search", {"pattern": "hello"}, FsLimits(search_file_bytes=100))
    assert text.splitlines() == [
        "README.md:2: hello world",
        "src/main.py:2:     print('hello')",
        "[1 binary file(s) skipped]",
        "[1 file(s) over the search size cap skipped]",
    ]


async def test_catastrophic_pattern_is_stopped_with_partial_results(workspace: Path) -> None:
    (workspace / "a-first.txt").write_text("aa\n")
    (workspace / "b-trap.txt").write_text("a" * 60 + "!\n")
    text = await run(workspace, "fs:search", {"pattern": "^(a|aa)+$"}, FsLimits(search_seconds=0.3))
    lines = text.splitlines()
    assert lines[0] == "a-first.txt:1: aa"
    assert lines[1].startswith("[search stopped after 0.3 s, results are partial:")
    assert "literal=true" in lines[1]


# --- hostile input: bounded patterns and walks, the run's deadline, odd names, hard links ----


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("a{1000000000}", "counted repeats expand to more than 10,000 steps"),
        ("(?:a{1000}){1000}", "counted repeats expand to more than 10,000 steps"),
        ("[[](?:x{200}){200}", "counted repeats expand to more than 10,000 steps"),
        ("a" * 1001, "the pattern is 1001 characters long; at most 1000 are allowed"),
    ],
)
async def test_a_pattern_that_would_take_the_hosts_memory_is_refused_before_compiling(
    workspace: Path, pattern: str, problem: str
) -> None:
    error = await refusal(workspace, "fs:search", {"pattern": pattern})
    assert problem in error.message


async def test_ordinary_counted_repeats_still_search(workspace: Path) -> None:
    text = await run(workspace, "fs:search", {"pattern": r"\w{5} (?:w\w{3}){1,2}"})
    assert text.splitlines()[0] == "README.md:2: hello world"


async def test_search_stops_at_the_runs_deadline_not_only_its_own(workspace: Path) -> None:
    search = tool(workspace, "fs:search", FsLimits(search_seconds=600))
    token = RUN_DEADLINE.set(time.monotonic() - 1)  # the run has already timed out
    try:
        text = await search.call({"pattern": "hello"})
    finally:
        RUN_DEADLINE.reset(token)
    assert text.splitlines() == [
        "no matches for 'hello'",
        "[search stopped at the run's timeout, results are partial: simplify the pattern "
        "(nested repeats backtrack badly), narrow the path, or pass literal=true]",
    ]


async def test_walks_stop_after_the_entry_cap_and_say_so(workspace: Path) -> None:
    limits = FsLimits(walk_entries=3)
    listed = await run(workspace, "fs:list", {"recursive": True}, limits)
    assert listed.splitlines()[-1] == (
        "[stopped after visiting 3 entries: results are partial; narrow the path]"
    )
    searched = await run(workspace, "fs:search", {"pattern": "guide"}, limits)
    assert searched.splitlines()[-1].startswith("[stopped after visiting 3 entries")


async def test_a_file_name_that_is_not_utf8_is_listed_as_text(workspace: Path) -> None:
    try:
        (workspace / os.fsdecode(b"caf\xff.txt")).write_text("hello bytes\n")
    except (UnicodeEncodeError, OSError):
        pytest.skip("this filesystem refuses file names that are not UTF-8")
    listed = await run(workspace, "fs:list", {})
    assert "caf\\xff.txt" in listed.splitlines()
    listed.encode("utf-8")  # what a model API is sent
    found = await run(workspace, "fs:search", {"pattern": "bytes"})
    assert found.splitlines() == ["caf\\xff.txt:1: hello bytes"]
    read = await run(workspace, "fs:read", {"path": "caf\\xff.txt"})  # the name as listed
    assert read == "hello bytes\n"


async def test_a_hard_link_is_refused_by_read_and_skipped_by_search(
    workspace: Path, tmp_path: Path
) -> None:
    os.link(tmp_path / "secret.txt", workspace / "linked.txt")
    error = await refusal(workspace, "fs:read", {"path": "linked.txt"})
    assert error.message == (
        "'linked.txt' is refused: it has 2 hard links, so it may be a file outside the workspace"
    )
    found = await run(workspace, "fs:search", {"pattern": "TOP-SECRET"})
    assert SECRET not in found
    assert "[1 file(s) with more than one hard link skipped]" in found.splitlines()
