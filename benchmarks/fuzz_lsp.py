"""Fuzz dslint's language server over stdio: random and malformed JSON-RPC, random edits, huge and binary documents.

    python benchmarks/fuzz_lsp.py                          # 5 sessions of 300 actions, seeds 0-4
    python benchmarks/fuzz_lsp.py --sessions 20 --actions 500 --seed 7 --time-limit 900

Each session starts `python -m dslint lsp` (stdio only, nothing else is opened), initializes it, then sends a
seeded random sequence of actions:

- documents opened, changed (incremental edits at random positions, some out of range or negative; whole-text
  replacements) and closed: scripts built from the lines dslint's rules look at, random text, binary junk (NUL
  bytes, control characters, lone surrogates as JSON escapes), and documents over the size limit (1.1 MB);
- requests: code actions and pulled diagnostics with random (also invalid) ranges and params, unknown methods,
  params of the wrong type, ids that are strings;
- malformed frames: a bad `Content-Length`, bodies that are not JSON, JSON that is not an object, a wrong
  `jsonrpc` version, a missing method.

What must hold (`check_session`): every request whose id is a number or a string gets a response (a result or
an error) within `REPLY_TIMEOUT` seconds, the server never dies, and at the end `shutdown` is answered and `exit`
ends the process with status 0. Bounded in count (`--actions`) and time (`--time-limit`). The suite runs a
derandomized slice (tests/test_lsp_fuzz_sample.py).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from lsp_client import LspClient  # noqa: E402

REPLY_TIMEOUT = 60.0
LINES = (
    "import deepspeed",
    "import torch",
    'engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")',
    'engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8, "fp16": {"enabled": True}})',
    'state = torch.load("weights.pt")',
    "loss.backward()",
    "engine.backward(loss)",
    "optimizer.step()",
    'model.to("cuda")',
    "def f(x):\n    return x",
    "x = (1, [2, {3: 4}])",
    "if x:\n    pass",
    "x = 1  # noqa: DSL202",
)
BIG = "x = 1\n" * 190_000  # 1.1 MB: over the default max-file-size


def _text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.55:
        return "\n".join(rng.choice(LINES) for _ in range(rng.randint(0, 30))) + "\n"
    if kind < 0.75:  # random printable junk and odd characters
        alphabet = "abc xyz()[]{}:=.,'\"\\\n\t#é中🙂\u2028\x0c"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
    if kind < 0.92:  # binary: NULs, control characters, lone surrogates (sent as JSON escapes)
        return "".join(
            chr(rng.choice([0, 1, 27, 127, 0xD800, 0xDFFF, 0xFFFE, rng.randint(0, 0x10FFFF)])) for _ in range(200)
        )
    return rng.choice(LINES[:3]) + "\n" + BIG


def _position(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.15:
        return {"line": rng.choice([-1, -100, 10**9]), "character": rng.choice([-1, 0, 10**9])}
    return {"line": rng.randint(0, 40), "character": rng.randint(0, 80)}


def _range(rng: random.Random) -> dict[str, Any]:
    return {"start": _position(rng), "end": _position(rng)}


class Session:
    """One server and what was asked of it."""

    def __init__(self, rng: random.Random, directory: Path) -> None:
        self.rng = rng
        self.directory = directory
        self.client = LspClient(cwd=directory)
        self.versions: dict[str, int] = {}
        self.pending: dict[int | str, str] = {}  # request id -> method
        self.sent = 0
        self.answered = 0

    def frame(self, body: bytes) -> None:
        self.client.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def message(self, message: dict[str, Any]) -> None:
        self.frame(json.dumps(message).encode("utf-8"))

    def request(self, method: str, params: Any, jsonrpc: str = "2.0") -> None:
        self.client.next_id += 1
        ident: int | str = self.client.next_id if self.rng.random() < 0.8 else f"r{self.client.next_id}"
        self.pending[ident] = method
        self.sent += 1
        self.message({"jsonrpc": jsonrpc, "id": ident, "method": method, "params": params})

    def uri(self) -> str:
        return (self.directory / f"doc{self.rng.randint(0, 4)}.py").as_uri()

    def act(self) -> None:
        rng = self.rng
        choice = rng.random()
        uri = self.uri()
        if choice < 0.2:
            self.versions[uri] = 1
            document = {"uri": uri, "languageId": "python", "version": 1, "text": _text(rng)}
            self.message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}})
        elif choice < 0.45:
            version = self.versions.get(uri, 0) + 1
            self.versions[uri] = version
            change: dict[str, Any] = {"text": _text(rng) if rng.random() < 0.3 else rng.choice(LINES) + "\n"}
            if rng.random() < 0.7:
                change["range"] = _range(rng)
            params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
            self.message({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params})
        elif choice < 0.5:
            self.versions.pop(uri, None)
            params = {"textDocument": {"uri": uri}}
            self.message({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": params})
        elif choice < 0.65:
            context = {"diagnostics": [], "only": rng.choice([None, ["quickfix"], ["source.fixAll.dslint"]])}
            self.request(
                "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": _range(rng), "context": context}
            )
        elif choice < 0.72:
            self.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        elif choice < 0.8:  # wrong params, unknown methods, wrong version
            method = rng.choice(["textDocument/codeAction", "textDocument/diagnostic", "dslint/unknown", "$/x"])
            params = rng.choice([None, [], 42, "text", {"textDocument": []}, {"range": _range(rng)}])
            self.request(method, params, jsonrpc=rng.choice(["2.0", "2.0", "1.0"]))
        else:  # malformed frames
            self.malformed()

    def malformed(self) -> None:
        rng = self.rng
        body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {}}).encode()
        kind = rng.randint(0, 5)
        if kind == 0:
            self.client.send_raw(b"Content-Length: abc\r\n\r\n" + body)
        elif kind == 1:
            self.frame(bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 60))))
        elif kind == 2:
            self.frame(rng.choice([b"[]", b"42", b'"x"', b"null", b"[1, 2]", b"{}"]))
        elif kind == 3:
            self.frame(b'{"jsonrpc": "2.0", "id": 5')  # cut short
        elif kind == 4:
            self.client.send_raw(b"X-Junk: 1\r\n")  # a header line of its own, before the next frame's
        else:
            self.frame(json.dumps({"jsonrpc": "2.0", "params": {}}).encode())  # no method

    def collect(self, timeout: float) -> None:
        """Wait until every request sent has its response (raises TimeoutError naming what is missing)."""
        deadline = time.monotonic() + timeout
        while self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.client.process.poll() is not None:
                missing = sorted(f"{ident}:{method}" for ident, method in self.pending.items())
                state = "died" if self.client.process.poll() is not None else "alive"
                raise TimeoutError(f"server {state}; no response to {missing[:10]} ({len(missing)} missing)")
            try:
                message = self.client.messages.get(timeout=min(remaining, 1.0))
            except Exception:
                continue
            if "method" in message and "id" in message:  # a request from the server: answer it
                self.client.send_raw(_frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
            elif "method" not in message and message.get("id") in self.pending:
                self.pending.pop(message["id"])
                self.answered += 1


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def check_session(seed: int, actions: int, directory: Path, time_limit: float = 600.0) -> dict[str, int]:
    """One session of `actions` random actions (seeded); raises AssertionError/TimeoutError when an invariant
    fails. Returns what was sent and answered."""
    rng = random.Random(seed)
    session = Session(rng, directory)
    started = time.monotonic()
    try:
        session.client.initialize(directory)
        for _ in range(actions):
            if time.monotonic() - started > time_limit:
                break
            session.act()
            if rng.random() < 0.1:  # now and then, let the answers catch up
                session.collect(REPLY_TIMEOUT)
        session.collect(REPLY_TIMEOUT)
        assert session.client.request("shutdown", {}, timeout=REPLY_TIMEOUT) is None
        session.client.notify("exit", {})
        code = session.client.process.wait(timeout=10)
        assert code == 0, f"exit status {code}"
        return {"requests": session.sent, "answered": session.answered}
    except (AssertionError, TimeoutError) as error:
        session.client.process.kill()
        session.client.process.wait()
        tail = b"".join(session.client.stderr_tail).decode("utf-8", "replace")[-3000:]
        raise type(error)(f"seed {seed}: {error}\n--- the server's stderr, last lines ---\n{tail}") from None
    finally:
        if session.client.process.poll() is None:
            session.client.process.kill()
            session.client.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--actions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds for the whole run")
    parser.add_argument("--directory", type=Path, default=None, help="where the documents live (default: a temp dir)")
    options = parser.parse_args()
    import tempfile

    started = time.monotonic()
    totals = {"sessions": 0, "actions": 0, "requests": 0, "answered": 0}
    for index in range(options.sessions):
        left = options.time_limit - (time.monotonic() - started)
        if left <= 0:
            break
        with tempfile.TemporaryDirectory() as temporary:
            directory = options.directory or Path(temporary)
            outcome = check_session(options.seed + index, options.actions, directory, left)
        totals["sessions"] += 1
        totals["actions"] += options.actions
        totals["requests"] += outcome["requests"]
        totals["answered"] += outcome["answered"]
        print(f"seed {options.seed + index}: {outcome['requests']} requests, all answered", flush=True)
    elapsed = time.monotonic() - started
    print(
        f"{totals['sessions']} sessions, {totals['actions']} actions, {totals['requests']} requests, "
        f"{totals['answered']} answered, no hang, exit 0 each, {elapsed:.0f} s"
    )


if __name__ == "__main__":
    main()
