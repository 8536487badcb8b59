"""The language server in each position encoding a client may negotiate, on lines holding non-ASCII text.

Every position the server sends (diagnostic ranges, quick-fix edits, the fix-all edit) and reads (incremental
`didChange` ranges) must be counted in the negotiated encoding's code units; the client here converts with its
own code (tests/lsp_client.py), applies the server's edits and checks the resulting text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsp_client import NEOVIM_0_11, LspClient, apply_text_edits, position_of, text_in

from dslint.diagnostics import Location
from dslint.lsp_positions import PositionCodec, lsp_lines

ROOT = Path(__file__).resolve().parent.parent
# a form feed line and a comment holding U+2028: str.splitlines() breaks there, LSP and Python do not
SCRIPT = (
    "import deepspeed\n"
    "import torch\n"
    "\x0c\n"
    "# 分节\u2028标记\n"
    'engine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'
    'meta = {"名前": "权重🚀"}; state = torch.load("权重🚀.pt", map_location="cuda")  # 😀\n'
)
FIXED = SCRIPT.replace('map_location="cuda"', 'map_location="cpu"')

# (what the client offers, the encoding the server must choose)
OFFERS = {
    "neovim-0.11": (NEOVIM_0_11, "utf-8"),
    "utf-8": ({"general": {"positionEncodings": ["utf-8"]}}, "utf-8"),
    "utf-16-by-default": ({}, "utf-16"),
    "utf-16": ({"general": {"positionEncodings": ["utf-16"]}}, "utf-16"),
    "utf-32": ({"general": {"positionEncodings": ["utf-32", "utf-16"]}}, "utf-32"),
}


@pytest.fixture(scope="module", params=sorted(OFFERS))
def session(request: pytest.FixtureRequest) -> Iterator[tuple[LspClient, str]]:
    offered, expected = OFFERS[request.param]
    client = LspClient()
    capabilities = client.initialize(ROOT, offered)["capabilities"]
    assert capabilities.get("positionEncoding", "utf-16") == expected
    yield client, expected
    assert client.close() == 0


def _open(client: LspClient, path: Path, text: str) -> tuple[str, list[dict[str, Any]]]:
    uri = path.as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
    )
    return uri, client.diagnostics(uri, 1)


def _actions(client: LspClient, uri: str, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}
    result: list[dict[str, Any]] = client.request(
        "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": found}}
    )
    return result


def _edits(action: dict[str, Any]) -> list[dict[str, Any]]:
    [change] = action["edit"]["documentChanges"]
    edits: list[dict[str, Any]] = change["edits"]
    return edits


def test_ranges_and_quick_fix_on_a_non_ascii_line(session: tuple[LspClient, str], tmp_path: Path) -> None:
    client, encoding = session
    uri, found = _open(client, tmp_path / "train.py", SCRIPT)
    [finding] = [d for d in found if d["code"] == "DSL201"]
    assert finding["range"]["start"]["line"] == 5
    assert text_in(SCRIPT, finding["range"], encoding) == '"cuda"'
    actions = _actions(client, uri, [finding])
    [quick] = [a for a in actions if a["kind"] == "quickfix" and a["title"].endswith("(DSL201)")]
    assert apply_text_edits(SCRIPT, _edits(quick), encoding) == FIXED
    [fix_all] = [a for a in actions if a["kind"] == "source.fixAll.dslint"]
    assert apply_text_edits(SCRIPT, _edits(fix_all), encoding) == FIXED
    assert finding["codeDescription"]["href"].endswith("/dslint/rules/pages/DSL201.md")  # the rule's own page
    # "disable DSL201 for this line": a noqa comment after the emoji comment, and the finding is gone
    [disable] = [a for a in actions if a["title"] == "Disable DSL201 for this line (# noqa)"]
    silenced = apply_text_edits(SCRIPT, _edits(disable), encoding)
    assert silenced == SCRIPT.replace("# 😀\n", "# 😀  # noqa: DSL201\n")
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": silenced}]}
    client.notify("textDocument/didChange", change)
    assert [d["code"] for d in client.diagnostics(uri, 2)] == []


def test_incremental_changes_on_non_ascii_lines(session: tuple[LspClient, str], tmp_path: Path) -> None:
    client, encoding = session
    uri, _ = _open(client, tmp_path / "edited.py", SCRIPT)
    text = SCRIPT
    # replace 权重 (inside the torch.load argument, after 🚀 on the same line) with 模型, then type a character
    # after the emoji of the comment line; the ranges are counted in the client's encoding
    start = text.index("权重🚀.pt")
    replace = {
        "range": {"start": position_of(text, start, encoding), "end": position_of(text, start + 2, encoding)},
        "text": "模型",
    }
    text = text[:start] + "模型" + text[start + 2 :]
    after = text.index("标记") + 2
    insert = {"range": {"start": position_of(text, after, encoding), "end": position_of(text, after, encoding)}}
    insert["text"] = "🚀"
    text = text[:after] + "🚀" + text[after:]
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [replace, insert]},
    )
    found = client.diagnostics(uri, 2)
    [finding] = [d for d in found if d["code"] == "DSL201"]
    assert text_in(text, finding["range"], encoding) == '"cuda"'
    [quick] = [a for a in _actions(client, uri, [finding]) if a["title"].endswith("(DSL201)")]
    fixed = apply_text_edits(text, _edits(quick), encoding)
    assert fixed == FIXED.replace("权重🚀.pt", "模型🚀.pt").replace("标记", "标记🚀")


@pytest.mark.parametrize(
    ("encoding", "column", "units"),
    [("utf-8", 9, 12), ("utf-16", 9, 10), ("utf-32", 9, 9), ("utf-8", 12, 15), ("utf-16", 3, 3)],
)
def test_codec_columns(encoding: str, column: int, units: int) -> None:
    line = "x = '😀' + y"
    codec = PositionCodec(encoding)
    assert codec.column_to_units(line, column) == units
    assert codec.units_to_column(line, units) == min(column, len(line))


def test_codec_rounds_an_offset_inside_a_character_down_and_clamps_past_the_end() -> None:
    codec = PositionCodec("utf-8")
    assert codec.units_to_column("é!", 1) == 0 and codec.units_to_column("é!", 2) == 1
    assert codec.units_to_column("é!", 40) == 2
    assert PositionCodec.negotiated("utf-7").encoding == "utf-16"


def test_lines_break_only_at_cr_lf_and_crlf() -> None:
    text = "a\x0cb\u2028c\r\nd\re\n"
    assert lsp_lines(text) == ["a\x0cb\u2028c", "d", "e"]
    codec = PositionCodec("utf-16")
    assert codec.to_position(lsp_lines(text), Location(2, 2)).line == 1
    assert codec.end_of(text).line == 3 and codec.end_of("a\nbé").character == 2
