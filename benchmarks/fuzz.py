"""Fuzz dslint's lint and fix with generated Python programs that have DeepSpeed lines spliced in.

    python benchmarks/fuzz.py                    # 5,000 examples, seed 0
    python benchmarks/fuzz.py --examples 20000 --seed 7

The generator is dslint's own (hypothesis strategies, no other dependency): programs of random statements and
expressions (nested calls, containers, operator chains, lambdas, comprehensions, strings with odd characters,
compound statements at several indentation levels), mixed with the lines dslint's rules look at
(`deepspeed.initialize`, `torch.load`, `engine.backward`, `optimizer.step`, `model.to("cuda")`, checkpoints, config
dicts), then sometimes damaged at the byte level (a dropped or inserted character, a bad encoding cookie, a null
byte, bytes that are not UTF-8, CRLF newlines, a BOM, very deep nesting).

For each program (`check_program`): linting its bytes never raises and never kills the process; when CPython
compiles it, `fix` either refuses with a reason or produces text that compiles, and fixing that text again
changes nothing. The suite runs a deterministic sample of 100 (tests/test_fuzz_sample.py). For grammar-driven
programs closer to the whole language, hypothesmith can be layered on the same check:
`pip install --target /tmp/hm hypothesmith` and `PYTHONPATH=/tmp/hm` (not needed here).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dslint.fix.loop import fix_source  # noqa: E402
from dslint.lint.file import lint_file  # noqa: E402
from dslint.lint.result import FileResult  # noqa: E402

DEEPSPEED_LINES = (
    "import deepspeed",
    "import torch",
    'engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")',
    'engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8, "fp16": {"enabled": True}})',
    'model_engine, *_ = deepspeed.initialize(args=args, model=net, config={"zero_optimization": {"stage": 3}})',
    'state = torch.load("weights.pt")',
    "model.load_state_dict(torch.load(args.ckpt))",
    "loss.backward()",
    "engine.backward(loss)",
    "optimizer.step()",
    "engine.step()",
    'model.to("cuda")',
    "model.cuda()",
    "engine.load_checkpoint(args.load_dir)",
    "_, client_state = engine.load_checkpoint(args.load_dir, tag)",
    "torch.save(model.state_dict(), 'out.pt')",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    "with torch.cuda.amp.autocast():\n    loss = engine(batch)",
    "loss = loss / args.gradient_accumulation_steps",
    "args = TrainingArguments(output_dir='o', deepspeed='ds_config.json')",
    "x = 1  # noqa: DSL202",
    "# dslint: noqa: DSL101",
)
NAMES = st.sampled_from(["a", "b", "model", "engine", "loss", "optimizer", "torch", "deepspeed", "args", "_", "é"])
ODD_TEXT = st.text(alphabet=st.sampled_from(list("ab \\'\"\t{}%:é€\U0001f600\u200b")), max_size=8)


def _expressions() -> st.SearchStrategy[str]:
    leaves = st.one_of(
        NAMES,
        st.integers(-(10**30), 10**30).map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        ODD_TEXT.map(repr),
        st.sampled_from(["None", "True", "...", "b'\\x00'", "f'{a!r:>{b}}'", "0xff", "1j"]),
    )

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        pair = st.tuples(inner, inner)
        return st.one_of(
            pair.map(lambda p: f"({p[0]}) + ({p[1]})"),
            pair.map(lambda p: f"({p[0]} and {p[1]})"),
            pair.map(lambda p: f"({p[0]}) if ({p[1]}) else ({p[0]})"),
            pair.map(lambda p: f"({p[0]})[{p[1]}]"),
            st.tuples(inner, NAMES).map(lambda p: f"({p[0]}).{p[1]}"),
            st.tuples(NAMES, st.lists(inner, max_size=3)).map(lambda p: f"{p[0]}({', '.join(p[1])})"),
            st.tuples(NAMES, inner).map(lambda p: f"f({p[0]}={p[1]})"),
            st.lists(inner, max_size=3).map(lambda items: f"[{', '.join(items)}]"),
            pair.map(lambda p: f"{{{p[0]}: {p[1]}}}"),
            inner.map(lambda e: f"(lambda a: {e})"),
            inner.map(lambda e: f"(not {e})"),
            inner.map(lambda e: f"-({e})"),
            pair.map(lambda p: f"[{p[0]} for a in {p[1]}]"),
            pair.map(lambda p: f"({p[0]}) < ({p[1]}) <= ({p[0]})"),
        )

    return st.recursive(leaves, extend, max_leaves=12)


EXPRESSIONS = _expressions()
SIMPLE = st.one_of(
    st.sampled_from(DEEPSPEED_LINES),
    st.tuples(NAMES, EXPRESSIONS).map(lambda p: f"{p[0]} = {p[1]}"),
    EXPRESSIONS,
    st.sampled_from(["pass", "raise", "del a", "import os.path as p", "from torch import nn", "assert a, b"]),
)


def _block(depth: int) -> st.SearchStrategy[list[str]]:
    if depth == 0:
        return st.lists(SIMPLE, min_size=1, max_size=4)
    header = st.one_of(
        EXPRESSIONS.map(lambda e: f"if {e}:"),
        EXPRESSIONS.map(lambda e: f"while {e}:"),
        EXPRESSIONS.map(lambda e: f"for a in {e}:"),
        st.just("def main(a, *args, b=1, **kw):"),
        st.just("async def step():"),
        st.just("class Trainer(Base):"),
        st.just("with torch.no_grad(), open('f') as h:"),
    )
    compound = st.tuples(header, _block(depth - 1)).map(lambda p: [p[0], *("    " + line for line in p[1])])
    guarded = _block(depth - 1).map(
        lambda body: ["try:", *("    " + line for line in body), "except Exception:", "    raise"]
    )
    return st.lists(st.one_of(SIMPLE.map(lambda s: [s]), compound, guarded), min_size=1, max_size=5).map(
        lambda parts: [line for part in parts for line in part]
    )


def _indent_lines(lines: list[str]) -> list[str]:
    """Multi-line DeepSpeed snippets keep their own indentation under the block's."""
    out: list[str] = []
    for line in lines:
        indent = line[: len(line) - len(line.lstrip(" "))]
        out.extend(indent + part if index else part for index, part in enumerate(line.split("\n")))
    return out


DAMAGE = (
    *["none"] * 12,
    "drop",
    "insert",
    "cookie",
    "bad-cookie",
    "nul",
    "latin1",
    "crlf",
    "bom",
    "deep",
    "deep-and",
    "tabs",
)


@st.composite
def programs(draw: st.DrawFn) -> bytes:
    """The bytes of one program: generated statements, DeepSpeed lines, sometimes damage."""
    lines = _indent_lines(draw(_block(draw(st.integers(0, 3)))))
    if draw(st.integers(0, 9)) < 7:  # most programs create an engine, so that every rule has work to do
        lines[0:0] = ["import deepspeed", "import torch", draw(st.sampled_from(DEEPSPEED_LINES[2:5]))]
    text = "\n".join(lines) + "\n"
    damage = draw(st.sampled_from(DAMAGE))
    if damage == "drop" and text:
        at = draw(st.integers(0, len(text) - 1))
        text = text[:at] + text[at + 1 :]
    elif damage == "insert":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list("([{}])'\":\\#\t\n\x0c\r"))) + text[at:]
    elif damage == "cookie":
        text = "# -*- coding: latin-1 -*-\n" + text
    elif damage == "bad-cookie":
        text = "# -*- coding: uft-8 -*-\n" + text
    elif damage == "nul":
        text += "x = 1\x00\n"
    elif damage == "deep":
        n = draw(st.integers(100, 3000))
        opener, closer = draw(st.sampled_from([("(", ")"), ("[", "]"), ("f(", ")"), ("-", ""), ("not ", "")]))
        text += "y = " + opener * n + "1" + closer * n + "\n"
    elif damage == "deep-and":
        text += "y = " + " and ".join(["a"] * draw(st.integers(100, 20000))) + "\n"
    elif damage == "tabs":
        text = text.replace("    ", "\t")
    data = text.encode("utf-8", "surrogatepass")
    if damage == "latin1":
        data = data.replace("é".encode(), b"\xe9")
    elif damage == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif damage == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


def check_program(data: bytes) -> str:
    """Run one program through lint and fix; raise AssertionError on a broken promise. Returns what happened."""
    result = lint_file("train.py", data)  # must not raise, must not crash
    assert isinstance(result, FileResult)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "train.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "refused by CPython"
    if not result.parsed:
        return "not analysed"
    outcome = fix_source("train.py", result.text or "", unsafe=True)
    if outcome.error is not None:
        return "fix refused"
    if not outcome.changed:
        return "nothing to fix"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(outcome.text, "fixed.py", "exec", dont_inherit=True)
    again = fix_source("train.py", outcome.text, unsafe=True)
    assert again.error is None and not again.changed, f"fix is not idempotent:\n{outcome.text}"
    return "fixed"


def run(examples: int, seed: int) -> dict[str, int]:
    tally: dict[str, int] = {}

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs())
    def one(data: bytes) -> None:
        outcome = check_program(data)
        tally[outcome] = tally.get(outcome, 0) + 1

    if seed:
        one = settings(derandomize=False)(one)  # type: ignore[assignment]
        from hypothesis import seed as with_seed

        one = with_seed(seed)(one)
    one()
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0, help="0: hypothesis' derandomized sequence")
    options = parser.parse_args()
    started = time.perf_counter()
    tally = run(options.examples, options.seed)
    elapsed = time.perf_counter() - started
    print(
        f"{sum(tally.values())} examples in {elapsed:.0f} s, no failure: "
        + ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
    )


if __name__ == "__main__":
    main()
