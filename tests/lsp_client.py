"""A small LSP client over stdio (JSON-RPC with Content-Length framing), for tests and the latency benchmark."""

from __future__ import annotations

import collections
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


# What Neovim 0.11's built-in client offers about positions and the features dslint serves (from its
# `vim.lsp.protocol.make_client_capabilities()`): it prefers UTF-8.
NEOVIM_0_11: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-8", "utf-16", "utf-32"]},
    "textDocument": {
        "synchronization": {"didSave": True, "dynamicRegistration": False, "willSave": True},
        "publishDiagnostics": {"relatedInformation": True, "tagSupport": {"valueSet": [1, 2]}, "dataSupport": True},
        "diagnostic": {"dynamicRegistration": False},
        "codeAction": {
            "dataSupport": True,
            "isPreferredSupport": True,
            "codeActionLiteralSupport": {
                "codeActionKind": {
                    "valueSet": ["", "quickfix", "refactor", "refactor.extract", "source", "source.organizeImports"]
                }
            },
        },
    },
    "workspace": {
        "applyEdit": True,
        "workspaceEdit": {"resourceOperations": ["rename", "create", "delete"]},
        "diagnostics": {"refreshSupport": True},
    },
}

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _index(text: str, position: dict[str, int], encoding: str) -> int:
    """The index into `text` of an LSP position counted in `encoding`'s code units, as a client computes it."""
    lines = _LINE.findall(text)
    if position["line"] >= len(lines):
        return len(text)
    start = sum(len(line) for line in lines[: position["line"]])
    line = lines[position["line"]].rstrip("\r\n")
    width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
    codec = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]
    units = 0
    for index, character in enumerate(line):
        if units >= position["character"]:
            return start + index
        units += len(character.encode(codec)) // width
    return start + len(line)


def position_of(text: str, index: int, encoding: str) -> dict[str, int]:
    """The LSP position of `text[index]` in `encoding`'s code units."""
    before = text[:index]
    line = len(_LINE.findall(before)) - (0 if before == "" or before.endswith(("\n", "\r")) else 1)
    column_text = re.split(r"\r\n|\r|\n", before)[-1]
    codec = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]
    width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
    return {"line": line, "character": len(column_text.encode(codec)) // width}


def text_in(text: str, range_: dict[str, Any], encoding: str) -> str:
    return text[_index(text, range_["start"], encoding) : _index(text, range_["end"], encoding)]


def apply_text_edits(text: str, edits: list[dict[str, Any]], encoding: str) -> str:
    """Apply LSP TextEdits (non-overlapping, positions in `encoding`) the way a client does: all against the
    original text, from the last to the first."""
    spans = sorted(
        ((_index(text, e["range"]["start"], encoding), _index(text, e["range"]["end"], encoding), e) for e in edits),
        key=lambda span: (span[0], span[1]),
        reverse=True,
    )
    for start, end, edit in spans:
        text = text[:start] + edit["newText"] + text[end:]
    return text


class LspClient:
    def __init__(self, cwd: Path = ROOT) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("DSLINT_OUTPUT_FORMAT", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dslint", "lsp"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        self.responses: dict[int, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.pulling = False  # the client offered `textDocument.diagnostic`: it pulls an open document's findings
        self.open: set[str] = set()
        self.stderr_tail: collections.deque[bytes] = collections.deque(maxlen=64)  # the last lines it logged
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        """Read what the server logs, as an editor does: a pipe nobody reads fills up and blocks the server."""
        stream = self.process.stderr
        assert stream is not None
        for line in iter(stream.readline, b""):
            self.stderr_tail.append(line)

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            headers: dict[str, str] = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self.messages.put(json.loads(body))

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send_raw(self, data: bytes) -> None:
        """Bytes as they are, framing included (a malformed frame, for the hostile-input tests)."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        if method == "textDocument/didOpen":
            self.open.add(params["textDocument"]["uri"])
        elif method == "textDocument/didClose":
            self.open.discard(params["textDocument"]["uri"])
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float = 60) -> Any:
        self.next_id += 1
        ident = self.next_id
        self._send({"id": ident, "method": method, "params": params})
        message = self.wait(lambda m: m.get("id") == ident and "method" not in m, timeout)
        if "error" in message:
            raise RuntimeError(message["error"])
        return message.get("result")

    def wait(self, predicate: Any, timeout: float = 60) -> dict[str, Any]:
        for index, stashed in enumerate(self.notifications):
            if predicate(stashed):
                return self.notifications.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no matching message from the server")
            message = self.messages.get(timeout=remaining)
            if "method" in message and "id" in message:  # a request from the server: answer it
                self._send({"id": message["id"], "result": None})
            if predicate(message):
                return message
            if "method" in message:
                self.notifications.append(message)

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = 60) -> list[dict[str, Any]]:
        """The findings for `uri` as this client gets them: pulled (`textDocument/diagnostic`) for an open
        document when the client pulls, else the next publishDiagnostics (for `version`, when given)."""
        if self.pulling and uri in self.open:
            report = self.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout)
            assert report["kind"] == "full"
            if version is not None:
                assert report["resultId"] == f"v{version}", report
            items: list[dict[str, Any]] = report["items"]
            return items
        message = self.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and (version is None or m["params"].get("version") == version)
            ),
            timeout,
        )
        result: list[dict[str, Any]] = message["params"]["diagnostics"]
        return result

    def initialize(
        self, root: Path, capabilities: dict[str, Any] | None = None, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`capabilities`: what the client offers (NEOVIM_0_11 is a real client's; default: nothing); `options`:
        its `initializationOptions`."""
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": capabilities or {},
        }
        if options is not None:
            params["initializationOptions"] = options
        result = self.request("initialize", params, timeout=120)
        self.notify("initialized", {})
        self.pulling = "diagnostic" in (capabilities or {}).get("textDocument", {})
        return dict(result)

    def close(self) -> int:
        try:
            self.request("shutdown", {}, timeout=30)
            self.notify("exit", {})
            return self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
