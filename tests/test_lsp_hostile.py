"""The language server against hostile input (issue #26): every request is answered, nothing hangs, `exit` ends
the process. Each case is a real session over stdio (`lsp_client.LspClient`), with short timeouts."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from lsp_client import LspClient

GOOD = 'import deepspeed\nimport torch\nengine, *_ = deepspeed.initialize(model=m, config="ds.json")\n'
GOOD += 'state = torch.load("w.pt")\n'  # DSL202


@pytest.fixture
def session(tmp_path: Path) -> Any:
    client = LspClient(cwd=tmp_path)
    client.initialize(tmp_path)
    yield client
    if client.process.poll() is None:
        client.process.kill()
        client.process.wait()


def _open(client: LspClient, uri: str, text: str, version: int = 1) -> None:
    document = {"uri": uri, "languageId": "python", "version": version, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": document})


def _still_answers(client: LspClient, tmp_path: Path, name: str = "good.py") -> None:
    uri = (tmp_path / name).as_uri()
    _open(client, uri, GOOD)
    assert [d["code"] for d in client.diagnostics(uri, 1, timeout=30)] == ["DSL202"]


def _ends(client: LspClient) -> int:
    """shutdown answered, then exit ends the process."""
    assert client.request("shutdown", {}, timeout=10) is None
    client.notify("exit", {})
    return client.process.wait(timeout=10)


def test_a_document_over_the_size_limit_is_answered_not_parsed(session: LspClient, tmp_path: Path) -> None:
    uri = (tmp_path / "big.py").as_uri()
    started = time.monotonic()
    _open(session, uri, GOOD + "x = 1\n" * 220_000)  # 1.3 MB: over max-file-size, never parsed
    [only] = session.diagnostics(uri, 1, timeout=15)
    assert time.monotonic() - started < 15
    assert only["message"] == "dslint: not checked: 1.3 MB over max-file-size (1.0 MB)" and only["source"] == "dslint"
    assert only["range"]["start"] == {"line": 0, "character": 0}
    session.notify(  # an edit that brings it under the limit: linted again
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": GOOD}]},
    )
    assert [d["code"] for d in session.diagnostics(uri, 2, timeout=30)] == ["DSL202"]
    _open(session, (tmp_path / "big2.py").as_uri(), GOOD + "x = 1\n" * 220_000)
    assert _ends(session) == 0  # at once, though a big document was just opened


def test_a_malformed_frame_does_not_leave_it_deaf(session: LspClient, tmp_path: Path) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 999, "method": "shutdown"}).encode()
    session.send_raw(b"Content-Length: abc\r\n\r\n" + body)  # the next frame's header follows the body directly
    _still_answers(session, tmp_path)
    session.send_raw(b"Content-Length: 5\r\n\r\n{oops")  # a body that is not JSON: no id to answer
    rest = json.dumps({"jsonrpc": "2.0", "id": 998, "method": "shutdown"}).encode()
    session.send_raw(
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % len(rest)
    )
    session.send_raw(rest)
    answer = session.wait(lambda m: m.get("id") == 998, timeout=10)
    assert answer["result"] is None
    session.notify("exit", {})
    assert session.process.wait(timeout=10) == 0


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("textDocument/codeAction", {"range": {"start": {"line": -1, "character": -5}, "end": {"line": 0}}}),
        ("textDocument/diagnostic", {"textDocument": ["not", "an", "object"]}),
        ("textDocument/codeAction", None),
    ],
)
def test_a_request_with_invalid_params_gets_an_error_response(
    session: LspClient, tmp_path: Path, method: str, params: dict[str, Any] | None
) -> None:
    uri = (tmp_path / "good.py").as_uri()
    if params is not None and method.endswith("codeAction"):
        params = {"textDocument": {"uri": uri}, "context": {"diagnostics": []}, **params}
    session.next_id += 1
    ident = session.next_id
    session.send_raw(_frame({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}))
    answer = session.wait(lambda m: m.get("id") == ident and "method" not in m, timeout=10)
    assert answer["error"]["code"] == -32602 and method in answer["error"]["message"], answer
    _still_answers(session, tmp_path)
    assert _ends(session) == 0


def test_many_full_text_replacements_are_coalesced(session: LspClient, tmp_path: Path) -> None:
    """150 full-text changes of a 170 kB script cost about one lint of the newest text, not 150 queued ones: the
    answer for the last version comes within twice the time of the first lint (the machine's own speed)."""
    uri = (tmp_path / "long.py").as_uri()
    filler = "".join(f"value_{index} = compute({index})\n" for index in range(6000))
    started = time.monotonic()
    _open(session, uri, GOOD + filler)
    session.diagnostics(uri, 1, timeout=120)
    one_lint = time.monotonic() - started
    started = time.monotonic()
    for version in range(2, 152):
        text = GOOD + filler + f"last = {version}\n"
        change = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}
        session.send_raw(_frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": change}))
    found = session.diagnostics(uri, 151, timeout=300)
    assert [d["code"] for d in found] == ["DSL202"]
    assert time.monotonic() - started < 2 * one_lint + 10, (time.monotonic() - started, one_lint)
    assert _ends(session) == 0


def test_exit_without_shutdown_ends_the_process_with_1(session: LspClient) -> None:
    session.notify("exit", {})
    assert session.process.wait(timeout=10) == 1


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for the worker process")
def test_a_killed_server_leaves_no_worker_behind(session: LspClient, tmp_path: Path) -> None:
    _still_answers(session, tmp_path)  # a full lint ran: the worker process exists
    server = session.process.pid
    children = [int(p) for p in Path(f"/proc/{server}/task/{server}/children").read_text().split()]
    workers = [pid for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert workers, children
    session.process.kill()  # SIGKILL: no exit handler runs
    session.process.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.2)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists() and b"Z" not in _state(pid)]
    assert not alive, "the worker outlived the server"


def _state(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().split(b") ", 1)[1][:1]
    except OSError:
        return b"Z"
