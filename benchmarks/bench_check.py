"""Speed of `dslint check` against peers on the same tree, in the same run, as ratios.

    python benchmarks/bench_check.py [TREE] [--repeat N]
    python benchmarks/bench_check.py --scripts 200      # a tree of 200 training scripts (copies of fixtures/)

TREE defaults to the installed DeepSpeed package's own source (found without importing it): a library, where
most files are settled by the prefilter. `--scripts N` measures the other extreme, where every file creates a
DeepSpeed engine and gets the full analysis. Each tool runs
as a subprocess over the same files; the median wall time of N runs is reported, with each tool's time
divided by dslint's. Peers: ruff (Rust), flake8 (pyflakes + pycodestyle, Python), both on all rules they
run by default. Ratios, not seconds, are what compare across machines.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def default_tree() -> Path:
    spec = importlib.util.find_spec("deepspeed")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("deepspeed is not installed; pass a TREE")
    return Path(next(iter(spec.submodule_search_locations)))


def timed(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scripts", type=int, default=0, help="benchmark N copies of the fixture scripts instead")
    args = parser.parse_args()
    if args.scripts:
        with tempfile.TemporaryDirectory() as temporary:
            run(script_tree(Path(temporary), args.scripts), args.repeat)
        return
    run(args.tree or default_tree(), args.repeat)


def script_tree(root: Path, count: int) -> Path:
    sources = sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py"))
    for i in range(count):
        source = sources[i % len(sources)]
        (root / f"script_{i:04d}_{source.name}").write_bytes(source.read_bytes())
    return root


def run(tree: Path, repeat: int) -> None:
    files = [p for p in tree.rglob("*.py")]
    lines = sum(len(p.read_bytes().splitlines()) for p in files)
    python = sys.executable
    tools: dict[str, list[str]] = {
        "dslint check (2 jobs)": [python, "-m", "dslint", "check", "-q", "-j", "2", str(tree)],
        "dslint check (1 job)": [python, "-m", "dslint", "check", "-q", "-j", "1", str(tree)],
        "flake8 (2 jobs)": [python, "-m", "flake8", "-j", "2", str(tree)],
    }
    ruff = shutil.which("ruff")
    if ruff:
        tools["ruff check"] = [ruff, "check", "--no-cache", "--exit-zero", "-q", str(tree)]
    print(f"tree: {tree} ({len(files)} .py files, {lines} lines), median of {repeat} runs")
    results = {name: timed(argv, repeat) for name, argv in tools.items()}
    base = results["dslint check (2 jobs)"]
    print(f"{'tool':<24} {'seconds':>8} {'vs dslint (2 jobs)':>20}")
    for name, seconds in results.items():
        print(f"{name:<24} {seconds:8.2f} {seconds / base:19.2f}x")


if __name__ == "__main__":
    main()
