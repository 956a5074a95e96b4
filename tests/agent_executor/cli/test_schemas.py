from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core import SchemaRegistry
from agent_executor._cli import main

pytestmark = pytest.mark.usefixtures("offline_model")

SCHEMA = {"type": "object", "required": ["files"], "properties": {"files": {"type": "integer"}}}


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("count.json").write_text(json.dumps(SCHEMA))
    return tmp_path


def test_add_list_show_rm(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    code = main(["schemas", "add", "code-count", "count.json", "--description", "files only"])
    out = capsys.readouterr().out
    db = here / ".agentshape" / "schemas.db"
    assert code == 0
    assert out.startswith("added schema code-count (hash ") and out.endswith(f" in {db}\n")
    assert SchemaRegistry(db).get("code-count") == SCHEMA

    assert main(["schemas", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "hash", "modified", "(UTC)", "description"]
    assert lines[2].startswith("code-count  ") and lines[2].endswith("  files only")

    assert main(["schemas", "show", "code-count"]) == 0
    assert json.loads(capsys.readouterr().out) == SCHEMA

    assert main(["schemas", "rm", "code-count"]) == 0
    assert capsys.readouterr().out == f"removed schema code-count from {db}\n"
    assert main(["schemas", "list"]) == 0
    assert capsys.readouterr().out == f"no schemas registered in {db}\n"


def test_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    Path("s.yaml").write_text("type: array\n")
    assert main(["schemas", "add", "b", "s.yaml"]) == 0
    assert main(["schemas", "add", "a", "count.json", "--description", "d"]) == 0
    capsys.readouterr()
    assert main(["schemas", "list", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [(e["name"], e["description"]) for e in entries] == [("a", "d"), ("b", None)]
    assert all(len(e["hash"]) == 64 for e in entries)


def test_replace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schemas", "add", "s", "count.json"]) == 0
    assert main(["schemas", "add", "s", "count.json"]) == 2
    assert "a schema named 's' is already registered" in capsys.readouterr().err
    Path("count.json").write_text('{"type": "object"}')
    assert main(["schemas", "add", "s", "count.json", "--replace"]) == 0
    assert capsys.readouterr().out.startswith("replaced schema s ")
    assert main(["schemas", "show", "s"]) == 0
    assert json.loads(capsys.readouterr().out) == {"type": "object"}


def test_registry_flag(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    assert main(["schemas", "add", "s", "count.json", "--registry", "other.db"]) == 0
    assert (here / "other.db").is_file() and not (here / ".agentshape").exists()
    capsys.readouterr()
    assert main(["schemas", "list", "--registry", "other.db"]) == 0
    assert "s  " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "cout"], "no schema named 'cout'"),
        (["rm", "nothing"], "no schema named 'nothing'"),
        (["add", "bad name", "count.json"], "is not a valid schema name"),
        (["add", "x", "missing.json"], "schema file missing.json does not exist"),
        (["add", "x", "bad.json"], "invalid schema at $.type"),
    ],
)
def test_mistakes_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    Path("bad.json").write_text('{"type": 12}')
    assert main(["schemas", "add", "count", "count.json"]) == 0
    capsys.readouterr()
    assert main(["schemas", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err
    assert err.startswith("agentshape: ") and err.count("\n") == 1


def test_unknown_name_suggests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schemas", "add", "count", "count.json"]) == 0
    capsys.readouterr()
    assert main(["schemas", "show", "cout"]) == 2
    assert "did you mean 'count'?" in capsys.readouterr().err


def test_an_action_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schemas"]) == 2
    assert "ACTION" in capsys.readouterr().err
