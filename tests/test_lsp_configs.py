"""DeepSpeed configs in the language server: an open config's own findings, and the findings a script's lint
places in the config it points at, published for that config's URI (open or not), each once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsp_client import NEOVIM_0_11, LspClient, text_in

ROOT = Path(__file__).resolve().parent.parent
CONFIG = '{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimisation": {"stage": 3}\n}\n'
SCRIPT = 'import deepspeed\n\nengine, *_ = deepspeed.initialize(model=model, config="ds_config.json")\n'


@pytest.fixture(scope="module")
def client() -> Iterator[LspClient]:
    session = LspClient()
    session.initialize(ROOT, NEOVIM_0_11)
    yield session
    assert session.close() == 0


def _open(client: LspClient, uri: str, language: str, text: str) -> None:
    item = {"uri": uri, "languageId": language, "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": item})


def _codes(found: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(d["code"], d["range"]["start"]["line"]) for d in found]


def test_opening_a_json_config_publishes_its_findings(client: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "ds_config.json").as_uri()
    _open(client, uri, "json", CONFIG)
    [finding] = client.diagnostics(uri, 1)
    assert finding["code"] == "DSL401" and text_in(CONFIG, finding["range"], "utf-8") == '"zero_optimisation"'
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": finding["range"], "context": {"diagnostics": [finding]}},
    )
    # DSL401's fix (an unsafe rename to the one close match) is offered on the config document too
    [rename] = [a for a in actions if a["kind"] == "quickfix" and "DSL401" in a["title"]]
    assert "zero_optimization" in rename["title"]
    assert "zero_optimization" in json.dumps(rename.get("edit", {}))
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_an_hjson_config_and_a_json_file_of_another_tool(client: LspClient, tmp_path: Path) -> None:
    hjson = (tmp_path / "zero3.hjson").as_uri()
    _open(client, hjson, "hjson", "{\n  # ZeRO-3\n  train_micro_batch_size_per_gpu: 4\n  fp_16: {enabled: true}\n}\n")
    assert _codes(client.diagnostics(hjson, 1)) == [("DSL401", 3)]
    other = (tmp_path / "package.json").as_uri()
    _open(client, other, "json", '{"name": "x", "version": "1.0.0"}')
    assert client.diagnostics(other, 1) == []


def test_findings_a_script_links_to_a_config_are_published_for_the_config(client: LspClient, tmp_path: Path) -> None:
    config_path = tmp_path / "ds_config.json"
    config_path.write_text(CONFIG, encoding="utf-8")
    config = config_path.as_uri()
    script = (tmp_path / "train.py").as_uri()
    _open(client, script, "python", SCRIPT)
    assert client.diagnostics(script, 1) == []  # the script itself is fine
    linked = client.diagnostics(config)  # the config is not open: published for its file's URI
    assert _codes(linked) == [("DSL401", 2)]
    # opened too: the finding shows once (the config's own lint and the script's agree)
    _open(client, config, "json", CONFIG)
    assert _codes(client.diagnostics(config, 1)) == [("DSL401", 2)]
    client.notify("textDocument/didClose", {"textDocument": {"uri": config}})
    assert _codes(client.diagnostics(config)) == [("DSL401", 2)], "the open script still finds it"
    client.notify("textDocument/didClose", {"textDocument": {"uri": script}})
    closed = [client.diagnostics(u) for u in sorted({script, config})]
    assert closed == [[], []]
