"""`textDocument/hover` over a finding: its message and its rule's explanation; nothing elsewhere. Settings from the
editor (`initializationOptions`)."""

from __future__ import annotations

from pathlib import Path

from lsp_client import LspClient

ROOT = Path(__file__).resolve().parent.parent
BAD = (ROOT / "fixtures" / "fix" / "model_moved_before_initialize.in.py").read_text(encoding="utf-8")


def test_hover_explains_the_finding_under_the_cursor(tmp_path: Path) -> None:
    client = LspClient()
    try:
        capabilities = client.initialize(ROOT)["capabilities"]
        assert capabilities["hoverProvider"]
        uri = (tmp_path / "train.py").as_uri()
        document = {"uri": uri, "languageId": "python", "version": 1, "text": BAD}
        client.notify("textDocument/didOpen", {"textDocument": document})
        found = client.diagnostics(uri, 1)
        start = found[0]["range"]["start"]
        shown = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": start})
        assert shown["contents"]["kind"] == "markdown"
        text = shown["contents"]["value"]
        assert text.startswith(f"**DSL101** {found[0]['message']}") and "## Why is this bad?" in text
        nowhere = client.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        )
        assert nowhere is None
    finally:
        assert client.close() == 0


def test_settings_from_the_editor_select_the_rules(tmp_path: Path) -> None:
    client = LspClient()
    try:
        client.initialize(ROOT, options={"ignore": ["DSL101"], "extendSelect": [], "bogus": 1})
        uri = (tmp_path / "train.py").as_uri()
        document = {"uri": uri, "languageId": "python", "version": 1, "text": BAD}
        client.notify("textDocument/didOpen", {"textDocument": document})
        assert client.diagnostics(uri, 1) == []  # DSL101 is the fixture's only finding
        shown = client.wait(lambda m: m.get("method") == "window/showMessage")
        assert "initializationOptions.bogus" in shown["params"]["message"]
    finally:
        assert client.close() == 0


def test_editor_options_are_validated() -> None:
    from dslint.lsp_actions import editor_resolver

    resolver, problems = editor_resolver({"select": ["DSL2"], "unsafeFixes": True, "isolated": True})
    assert problems == [] and resolver.overrides.select == ("DSL2",) and resolver.overrides.unsafe_fixes
    _, problems = editor_resolver({"select": ["NOPE9"]})
    assert len(problems) == 1 and "the pyproject's settings apply" in problems[0]
    _, problems = editor_resolver(["select"])
    assert problems == ["initializationOptions: expected an object, got list"]
