"""`dslint lsp` in a real client session over stdio: diagnostics on open and change, quick fixes, fix all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsp_client import LspClient

from dslint.diagnostics import Edit, Location
from dslint.fix.edits import apply_edits

ROOT = Path(__file__).resolve().parent.parent
BAD = (ROOT / "fixtures" / "fix" / "model_moved_before_initialize.in.py").read_text(encoding="utf-8")
SAFE = """import deepspeed


def main(args, model):
    engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model)
    engine.cuda()
    x = 1  # noqa: E501, DSL999
"""


def _apply(text: str, edits: list[dict[str, Any]]) -> str:
    """Apply LSP TextEdits (ASCII text here, so UTF-16 columns are characters)."""
    converted = [
        Edit(
            Location(e["range"]["start"]["line"] + 1, e["range"]["start"]["character"] + 1),
            Location(e["range"]["end"]["line"] + 1, e["range"]["end"]["character"] + 1),
            e["newText"],
        )
        for e in edits
    ]
    return apply_edits(text, converted)


@pytest.fixture(scope="module")
def client() -> Any:
    session = LspClient()
    capabilities = session.initialize(ROOT)["capabilities"]
    assert capabilities["codeActionProvider"]["codeActionKinds"] == ["quickfix", "source.fixAll.dslint"]
    yield session
    assert session.close() == 0


def test_diagnostics_on_open_and_change_and_close(client: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "train.py").as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": BAD}}
    )
    found = client.diagnostics(uri, 1)
    assert [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"]) for d in found] == [
        ("DSL101", 16, 12),
        ("DSL104", 17, 4),
    ]
    assert {d["source"] for d in found} == {"dslint"} and {d["severity"] for d in found} == {2}
    # an incremental change that deletes line 18 (`model.half()`)
    change = {"range": {"start": {"line": 17, "character": 0}, "end": {"line": 18, "character": 0}}, "text": ""}
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]})
    assert [d["range"]["start"]["line"] for d in client.diagnostics(uri, 2)] == [16]
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_quick_fix_and_fix_all(client: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "safe.py").as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": SAFE}}
    )
    found = client.diagnostics(uri, 1)
    assert [d["code"] for d in found] == ["DSL102", "DSL010"]
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 7, "character": 0}}
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": found}},
    )
    quick = [a for a in actions if a["kind"] == "quickfix" and not a["title"].startswith("Disable ")]
    assert len(quick) == 2 and all(a["diagnostics"] for a in quick)
    disable = [a["title"] for a in actions if a["title"].startswith("Disable ")]
    assert disable == ["Disable DSL102 for this line (# noqa)"], "none for DSL010, which reports noqa comments"
    fix_all = [a for a in actions if a["kind"] == "source.fixAll.dslint"]
    assert len(fix_all) == 1 and fix_all[0]["title"] == "dslint: fix all safe fixes"
    # the quick fix of DSL010 removes only the unknown code
    unused = next(a for a in quick if a["diagnostics"][0]["code"] == "DSL010")
    [change] = unused["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uri, "version": 1}
    assert _apply(SAFE, change["edits"]).endswith("x = 1  # noqa: E501\n")
    # fix all: every safe fix, verified, as one edit; the result is clean
    [change] = fix_all[0]["edit"]["documentChanges"]
    fixed = _apply(SAFE, change["edits"])
    assert fixed == SAFE.replace("# noqa: E501, DSL999", "# noqa: E501"), "DSL102's fix is unsafe: not applied"
    unsafe = next(a for a in quick if a["diagnostics"][0]["code"] == "DSL102")
    assert unsafe["title"].endswith("(DSL102, unsafe)") and not unsafe.get("isPreferred")
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]},
    )
    assert [d["code"] for d in client.diagnostics(uri, 2)] == ["DSL102"]


def test_only_fix_all_when_asked(client: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "only.py").as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": SAFE}}
    )
    found = client.diagnostics(uri, 1)
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 7, "character": 0}}
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": found, "only": ["source.fixAll"]}},
    )
    assert [a["kind"] for a in actions] == ["source.fixAll.dslint"]


def test_other_languages_are_left_alone(client: LspClient, tmp_path: Path) -> None:
    notes = (tmp_path / "notes.md").as_uri()
    script = (tmp_path / "after.py").as_uri()
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": notes, "languageId": "markdown", "version": 1, "text": "deepspeed.initialize"}},
    )
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": script, "languageId": "python", "version": 1, "text": BAD}}
    )
    message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    assert message["params"]["uri"] == script


def test_an_edit_in_a_long_script_is_answered_by_the_fast_relint_then_confirmed(
    client: LspClient, tmp_path: Path
) -> None:
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from lsp_latency import make_script

    text = make_script(400)
    uri = (tmp_path / "long.py").as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
    )
    assert [d["code"] for d in client.diagnostics(uri, 1)] == ["DSL101"]
    client.wait(
        lambda m: m.get("method") == "window/logMessage" and "full lint of long.py v1 " in m["params"]["message"]
    )
    line = next(n for n, source in enumerate(text.splitlines()) if source.startswith("def helper_10(")) + 3
    change = {
        "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
        "text": "    model.cuda()\n",
    }
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]})
    fast = client.wait(
        lambda m: m.get("method") == "window/logMessage" and "fast re-lint of long.py v2 " in m["params"]["message"]
    )
    assert "(1 findings)" in fast["params"]["message"], fast
    assert [(d["code"], d["range"]["start"]["line"]) for d in client.diagnostics(uri, 2)] == [("DSL101", 15)]
    client.wait(
        lambda m: m.get("method") == "window/logMessage" and "full lint of long.py v2 " in m["params"]["message"]
    )


def test_an_open_file_gets_the_findings_the_project_index_gives_and_a_save_refreshes_them(
    client: LspClient, tmp_path: Path
) -> None:
    """A builder whose model another module hands to initialize: `dslint check` flags its move through the
    project index, and so does the editor; once the other module is saved without that call, the finding goes."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(ROOT / "fixtures" / "projects" / "model_builders", project)
    (project / "pyproject.toml").write_text("[tool.dslint]\n", encoding="utf-8")
    builders = project / "builders.py"
    uri = builders.as_uri()
    text = builders.read_text(encoding="utf-8")
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
    )
    found = client.diagnostics(uri, 1)
    assert [(d["code"], d["range"]["start"]["line"]) for d in found] == [("DSL101", 7), ("DSL104", 9)], found
    assert "train.py:21" in found[0]["message"]

    train = project / "train.py"
    train.write_text(train.read_text(encoding="utf-8").replace("model = get_model(args)", "model = None"))
    client.notify("textDocument/didSave", {"textDocument": {"uri": train.as_uri()}})
    assert client.diagnostics(uri, 1) == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
