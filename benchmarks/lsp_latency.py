"""How long `dslint lsp` takes to publish diagnostics after an edit of a 2,000-line DeepSpeed script.

Not a timed test: run it by hand, `python benchmarks/lsp_latency.py`. It starts the server over stdio (the
client of tests/lsp_client.py), opens a generated 2,000-line script, warms up, then makes edits inside one
function (the usual case while typing) and reports, per edit, the time until the first diagnostics for the new
version (the server's fast re-lint of the touched statements) and until the full re-lint confirms them.
"""

from __future__ import annotations

import contextlib
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from lsp_client import LspClient  # noqa: E402

HEADER = '''"""A generated DeepSpeed training script for the latency benchmark."""

import argparse

import deepspeed
import torch

DS_CONFIG = {"train_batch_size": 8, "optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 2}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    args = parser.parse_args()
    model = torch.nn.Linear(16, 4)
    model.cuda()
    engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, config=DS_CONFIG)
    for step in range(10):
        x = torch.randn(8, 16).to(engine.device)
        loss = engine(x).sum()
        engine.backward(loss)
        engine.step()
'''

BLOCK = '''

def helper_{i}(batch, scale=1.0):
    """Helper {i}: plain tensor code, as most of a real training script is."""
    values = [item * scale for item in batch]
    total = sum(values)
    if total > {i}:
        total = total - {i}
    else:
        total = total + 1
    return {{"total": total, "count": len(values), "name": "helper_{i}"}}
'''


def make_script(lines: int = 2000) -> str:
    text = HEADER
    i = 0
    while text.count("\n") < lines - 12:
        text += BLOCK.format(i=i)
        i += 1
    return text + '\n\nif __name__ == "__main__":\n    main()\n'


def main() -> None:
    text = make_script()
    line_count = text.count("\n")
    path = Path("/tmp/dslint_lsp_benchmark/train.py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client = LspClient(cwd=path.parent)
    client.initialize(path.parent)
    start = time.perf_counter()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
    )
    first = client.diagnostics(uri, 1, timeout=300)
    got_first = time.perf_counter()
    client.wait(
        lambda m: m.get("method") == "window/logMessage" and "full lint of train.py v1 " in m["params"]["message"],
        timeout=300,
    )
    print(
        f"{line_count} lines; open: first diagnostics ({len(first)} findings) in {1000 * (got_first - start):.0f} ms,"
        f" full lint done in {1000 * (time.perf_counter() - start):.0f} ms"
    )

    lines = text.splitlines(keepends=True)
    state = {"version": 1}
    for label, anchor in (("inside a helper function", "def helper_60("), ("inside main()", "def main(")):
        target = next(n for n, line in enumerate(lines) if anchor in line) + 3
        measure(client, uri, target, label, state)
    client.close()


def measure(client: LspClient, uri: str, target: int, label: str, state: dict[str, int]) -> None:
    """Twelve edits at line `target` (0-based): insert a line, delete it again, ...; the first two warm up."""
    fast: list[float] = []
    full: list[float] = []
    cpus: list[float] = []
    for round_ in range(12):
        state["version"] += 1
        version = state["version"]
        insert = f"    extra_{round_} = total_{round_} = {round_}\n" if round_ % 2 == 0 else ""
        change = {
            "range": {
                "start": {"line": target, "character": 0},
                "end": {"line": target + (round_ % 2), "character": 0},
            },
            "text": insert,
        }
        sent = time.perf_counter()
        client.notify(
            "textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        )
        client.diagnostics(uri, version, timeout=300)
        got_fast = time.perf_counter()
        with contextlib.suppress(TimeoutError):
            fast_log = client.wait(
                lambda m, v=version: (
                    m.get("method") == "window/logMessage"
                    and f"fast re-lint of train.py v{v} " in m["params"]["message"]
                ),
                timeout=300,
            )
            match = re.search(r"cpu (\d+) ms", fast_log["params"]["message"])
            if match and round_ >= 2:
                cpus.append(float(match.group(1)))
        with contextlib.suppress(TimeoutError):
            client.wait(
                lambda m, v=version: (
                    m.get("method") == "window/logMessage" and f"full lint of train.py v{v} " in m["params"]["message"]
                ),
                timeout=300,
            )
        got_full = time.perf_counter()
        if round_ >= 2:  # warm
            fast.append(1000 * (got_fast - sent))
            full.append(1000 * (got_full - sent))
    print(f"edits {label}:")
    median, worst = statistics.median(fast), max(fast)
    print(f"  edit -> first diagnostics: median {median:.0f} ms, max {worst:.0f} ms ({len(fast)} edits)")
    if cpus:
        print(f"  server CPU for the fast re-lint: median {statistics.median(cpus):.0f} ms, max {max(cpus):.0f} ms")
    print(f"  edit -> full re-lint done: median {statistics.median(full):.0f} ms, max {max(full):.0f} ms")


if __name__ == "__main__":
    main()
