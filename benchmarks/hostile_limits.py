"""Measure what libcst's native parser and dslint's own traversal survive: the figures behind the defaults in
dslint/limits.py (`max-nesting`, `max-file-size`).

    python benchmarks/hostile_limits.py nesting [SHAPE...]  # per shape: CPython's verdict, libcst's, dslint's
    python benchmarks/hostile_limits.py memory      # peak memory and time of parsing generated files

Every probe runs in a child process (a crash there is a result: "SIGSEGV"), with the parse guard bypassed, so
that it measures libcst itself. `nesting` prints, for each shape, whether CPython compiles it and whether
libcst parses it at 100 .. 20,000, then the largest size at which a whole lint + fix succeeds, with its depth
as `dslint.lint.parse_guard.tree_depth` counts it: `max-nesting` must stay below the smallest of those.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = {
    "parens": lambda n: "x = " + "(" * n + "1" + ")" * n,
    "lists": lambda n: "x = " + "[" * n + "1" + "]" * n,
    "dicts": lambda n: "x = " + "{1: " * n + "1" + "}" * n,
    "calls": lambda n: "x = " + "f(" * n + "1" + ")" * n,
    "unary": lambda n: "x = " + "-" * n + "1",
    "not": lambda n: "x = " + "not " * n + "1",
    "lambdas": lambda n: "x = " + "lambda: " * n + "1",
    "attributes": lambda n: "x = a" + ".b" * n,
    "subscripts": lambda n: "x = a" + "[0]" * n,
    "plus": lambda n: "x = " + " + ".join(["a"] * n),
    "and": lambda n: "x = " + " and ".join(["a"] * n),
    "strings": lambda n: "x = " + " ".join(['"a"'] * n),
    "elif": lambda n: "if a:\n    pass\n" + "elif a:\n    pass\n" * n,
}
HEADER = (
    "import deepspeed, torch\n"
    'engine, *_ = deepspeed.initialize(model=m, config="ds.json")\n'
    'state = torch.load("w.pt")\n'
)
CHILD = """
import sys, warnings
sys.path.insert(0, {root!r})
sys.setrecursionlimit(1000)
source = sys.stdin.read()
mode = sys.argv[1]
if mode == "cpython":
    warnings.simplefilter("ignore")
    try:
        compile(source, "x", "exec", 0x400)
    except (SyntaxError, RecursionError, MemoryError) as error:
        print("refuses:", type(error).__name__); raise SystemExit
    print("ok")
elif mode == "libcst":
    import libcst
    libcst.parse_module(source); print("ok")
else:
    import libcst
    from dslint.fix.loop import fix_source
    from dslint.lint.result import config_rules, script_rules
    from dslint.lint.parsed_script import lint_module
    from dslint.limits import Limits
    from dslint.selection import RuleSelection
    selection = RuleSelection()
    try:
        lint_module("x.py", libcst.parse_module(source), script_rules(selection), config_rules(selection))
        outcome = fix_source("x.py", source, unsafe=True, limits=Limits(max_nesting=10**9))
    except RecursionError:
        print("RecursionError"); raise SystemExit
    print("ok" if outcome.error is None else "refused")
"""


def probe(mode: str, source: str) -> str:
    child = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT)), mode],
        input=source,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if child.returncode < 0:
        return signal.Signals(-child.returncode).name
    return (child.stdout.strip().splitlines() or [f"exit {child.returncode}"])[-1]


def depth_of(source: str) -> int:
    sys.path.insert(0, str(ROOT))
    from dslint.lint.parse_guard import tree_depth

    return tree_depth(compile(source, "x", "exec", 0x400), source.encode())[0]


def nesting(shapes: list[str]) -> None:
    for name in shapes or list(SHAPES):
        shape = SHAPES[name]
        verdicts = []
        for n in (100, 1000, 5000, 20000):
            source = HEADER + shape(n) + "\n"
            verdicts.append(f"{n}: cpython {probe('cpython', source)}, libcst {probe('libcst', source)}")
        low, high = 10, 1200  # the largest n whose lint + fix succeeds, by bisection
        while high - low > 2:
            middle = (low + high) // 2
            if probe("dslint", HEADER + shape(middle) + "\n") == "ok":
                low = middle
            else:
                high = middle
        source = HEADER + shape(low) + "\n"
        try:
            depth = str(depth_of(source))
        except (SyntaxError, RecursionError, MemoryError):
            depth = "(CPython refuses)"
        print(f"{name}: " + "; ".join(verdicts) + f"; dslint lint+fix up to n={low}, depth {depth}", flush=True)


def memory() -> None:
    for lines in (5_000, 20_000, 60_000):
        body = "".join(f"value_{i} = compute(a{i}, b={i}, c=[{i}, {i + 1}])\n" for i in range(lines))
        source = HEADER + body
        script = (
            "import resource, sys, time, libcst\n"
            "source = sys.stdin.read(); started = time.perf_counter(); libcst.parse_module(source)\n"
            "print(f'{time.perf_counter() - started:.1f} s, peak '\n"
            "      f'{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB')\n"
        )
        started = time.perf_counter()
        child = subprocess.run([sys.executable, "-c", script], input=source, capture_output=True, text=True)
        wall = time.perf_counter() - started
        size = len(source.encode()) / 1024 / 1024
        print(f"{size:.1f} MB of source: {child.stdout.strip() or child.stderr[-200:]} (wall {wall:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description="What libcst and dslint survive.")
    parser.add_argument("what", choices=["nesting", "memory"])
    parser.add_argument("shapes", nargs="*", choices=[*SHAPES, []], help="for nesting: these shapes only")
    options = parser.parse_args()
    nesting(options.shapes) if options.what == "nesting" else memory()


if __name__ == "__main__":
    main()
