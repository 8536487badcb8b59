"""Pull diagnostics (`textDocument/diagnostic`): a client that offers them (Neovim 0.10+, VS Code) pulls an open
document's findings and is sent none for it (it would show each twice); after an edit the server asks it to
pull again (`workspace/diagnostic/refresh`)."""

from __future__ import annotations

from pathlib import Path

from lsp_client import NEOVIM_0_11, LspClient

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = (
    "import deepspeed\nimport torch\nengine, *_ = deepspeed.initialize(model=m)\n"
    's = torch.load("w", map_location="cuda")\n'
)


def test_pull_diagnostics(tmp_path: Path) -> None:
    client = LspClient()
    try:
        capabilities = client.initialize(ROOT, NEOVIM_0_11)["capabilities"]
        assert capabilities["diagnosticProvider"]["interFileDependencies"] is True
        uri = (tmp_path / "train.py").as_uri()
        item = {"uri": uri, "languageId": "python", "version": 1, "text": SCRIPT}
        client.notify("textDocument/didOpen", {"textDocument": item})
        report = client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        assert report["kind"] == "full" and report["resultId"] == "v1"
        assert [(d["code"], d["range"]["start"]["line"]) for d in report["items"]] == [("DSL201", 3)]
        client.wait(lambda m: m.get("method") == "window/logMessage" and "full lint of train.py v1" in str(m))
        change = {"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}}, "text": "\n"}
        client.notify(
            "textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]}
        )
        client.wait(lambda m: m.get("method") == "workspace/diagnostic/refresh")
        again = client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        assert again["resultId"] == "v2"
        assert [(d["code"], d["range"]["start"]["line"]) for d in again["items"]] == [("DSL201", 4)]
        pushed = [m for m in client.notifications if m.get("method") == "textDocument/publishDiagnostics"]
        assert pushed == [], "a pulling client is sent no findings for the documents it pulls"
    finally:
        assert client.close() == 0
