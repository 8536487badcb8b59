"""Speed of `dslint check` against peers, in one run, as ratios to `ruff check --no-cache`; writes docs/benchmarks.md.

    python benchmarks/bench_check.py --transformers /work/bench/transformers-wheel --realcode /work/realcode
    python benchmarks/bench_check.py --repeat 5 --peer-repeat 1 --no-write

Trees: DeepSpeed's own source (the installed package, found without importing it), and, when given, an unpacked
transformers wheel (`pip download --no-deps transformers`, unzipped) and the real-projects corpus: the twelve
repositories of `CORPUS` under `--realcode`, checked as one project (one run over the twelve folders). On each
tree every tool runs as a subprocess over the same files; the median wall time of `--repeat` runs is
reported, divided by ruff's median of the same run:
- dslint cold: `--no-cache`; dslint warm: with a cache filled by one run before the timed ones (`--cache-dir`
  in a temporary folder);
- peers: ruff (`--no-cache`, its default rules), flake8 (`-j` cores), TorchFix and Fixit (slow: `--peer-repeat`
  runs, each stopped after `--peer-timeout` seconds). TorchFix and Fixit are looked for in `--peers-venv`
  (a virtual environment of their own, so that the project's stays as its lock says); a peer that is not
  installed is reported missing.
Then: one 125-line training script end to end (cold: no cache; warm: a cache hit), and the language server's
first diagnostics after `didOpen` of a 2,000-line script (benchmarks/lsp_latency.py's script and client).

Timings on a shared machine are noisy: the table carries the load average (`uptime`) beside the figures, and
ratios (measured in the same run) compare across machines where seconds do not.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import importlib.util
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]


# The real-projects corpus (issue #22): twelve public repositories that use DeepSpeed, laid out under
# `--realcode` as OWNER__NAME@COMMIT (benchmarks/realcode/MANIFEST.tsv and TEST_1.tsv name their commits). A mix:
# the two largest trees (unilm, LMOps: thousands of files each), example collections and trainers, launchers
# (shell scripts, Makefiles, Markdown commands: Megatron-DeepSpeed, gpt-neox, OpenRLHF, LLaVA) and notebooks
# (FlagEmbedding, zero_nlp, trl, Chinese-LLaMA-Alpaca). They are checked as ONE project: one `dslint check` (and
# one `ruff check`) over the twelve folders, so one project index spans them all, as a monorepo of them would.
CORPUS = (
    "microsoft__unilm",
    "microsoft__LMOps",
    "microsoft__DeepSpeedExamples",
    "h2oai__h2o-llmstudio",
    "FlagOpen__FlagEmbedding",
    "yuanzhoulvpi2017__zero_nlp",
    "huggingface__trl",
    "ymcui__Chinese-LLaMA-Alpaca",
    "bigscience-workshop__Megatron-DeepSpeed",
    "EleutherAI__gpt-neox",
    "OpenRLHF__OpenRLHF",
    "haotian-liu__LLaVA",
)


def corpus(realcode: Path) -> list[Path]:
    """The corpus's folders under `realcode` (each `OWNER__NAME@COMMIT`); all twelve must be there."""
    found = []
    for name in CORPUS:
        matches = sorted(realcode.glob(f"{name}@*"))
        if not matches:
            raise SystemExit(f"{realcode}: no folder for {name} (the corpus needs all twelve)")
        found.append(matches[0])
    return found


def deepspeed_source() -> Path:
    spec = importlib.util.find_spec("deepspeed")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("deepspeed is not installed: no default tree")
    return Path(next(iter(spec.submodule_search_locations)))


def load() -> str:
    return os.getloadavg().__repr__() if hasattr(os, "getloadavg") else "?"


def timed(argv: list[str], repeat: int, timeout: float | None = None, cwd: Path | None = None) -> float | None:
    """The median wall time of `repeat` runs; None when a run passes `timeout`."""
    times = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeat):
        start = time.perf_counter()
        # a session of its own: a peer stopped at the timeout takes its worker processes with it
        process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env, start_new_session=True
        )
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def tree_size(trees: list[Path]) -> tuple[int, int, int]:
    """Python files, their lines, and notebooks."""
    files = [p for tree in trees for p in tree.rglob("*.py") if p.is_file()]
    notebooks = sum(1 for tree in trees for p in tree.rglob("*.ipynb") if p.is_file())
    return len(files), sum(len(p.read_bytes().splitlines()) for p in files), notebooks


def dslint(*args: str) -> list[str]:
    return [sys.executable, "-m", "dslint", "check", "-q", "--exit-zero", *args]


def peer(name: str, venv: Path) -> str | None:
    for candidate in (venv / "bin" / name, Path(sys.executable).parent / name):
        if candidate.exists():
            return str(candidate)
    return shutil.which(name)


def measure_tree(label: str, trees: list[Path], args: argparse.Namespace) -> list[str]:
    count, lines, notebooks = tree_size(trees)
    paths = [str(tree) for tree in trees]
    ruff = shutil.which("ruff") or peer("ruff", args.peers_venv)
    if ruff is None:
        raise SystemExit("ruff is not installed: it is the yardstick")
    rows: list[tuple[str, float | None, str]] = []
    base = timed([ruff, "check", "--no-cache", "--exit-zero", "-q", *paths], args.repeat)
    assert base is not None
    rows.append(("ruff check --no-cache", base, ""))
    rows.append(("dslint check, cold (--no-cache)", timed(dslint("--no-cache", *paths), args.repeat), ""))
    with tempfile.TemporaryDirectory() as cache:
        warm = dslint("--cache-dir", cache, *paths)
        timed(warm, 1)  # fills the cache
        rows.append(("dslint check, warm (cache)", timed(warm, args.repeat), ""))
    if args.skip_peers:
        rows.append(("flake8, torchfix, fixit", None, "not run (--skip-peers)"))
        return _table(label, trees, (count, lines, notebooks), base, rows)
    flake8 = [sys.executable, "-m", "flake8", "-j", str(os.cpu_count() or 1), "--exit-zero", *paths]
    rows.append(("flake8", timed(flake8, args.peer_repeat, args.peer_timeout), ""))
    for name, argv in (("torchfix", ["{}", *paths]), ("fixit", ["{}", "lint", *paths])):
        found = peer(name, args.peers_venv)
        if found is None:
            rows.append((name, None, "missing (not installed)"))
            continue
        seconds = timed([found, *argv[1:]], args.peer_repeat, args.peer_timeout)
        rows.append((name, seconds, "" if seconds is not None else f"> {args.peer_timeout:.0f} s (stopped)"))
    return _table(label, trees, (count, lines, notebooks), base, rows)


def _table(
    label: str, trees: list[Path], size: tuple[int, int, int], base: float, rows: list[tuple[str, float | None, str]]
) -> list[str]:
    count, lines, notebooks = size
    where = f"`{trees[0]}`" if len(trees) == 1 else f"{len(trees)} folders of `{trees[0].parent}`, one run"
    books = f", {notebooks} notebooks" if notebooks else ""
    out = [f"### {label}: {count} .py files, {lines} lines{books} ({where})", ""]
    if len(trees) > 1:
        out += ["Folders: " + ", ".join(f"`{tree.name}`" for tree in trees), ""]
    out += ["| tool | seconds | x ruff |", "|---|---:|---:|"]
    for name, seconds, note in rows:
        if seconds is None:
            out.append(f"| {name} | {note or 'n/a'} | |")
        else:
            out.append(f"| {name} | {seconds:.2f} | {seconds / base:.2f} |")
    out.append("")
    print("\n".join(out), flush=True)
    return out


def measure_script(args: argparse.Namespace) -> list[str]:
    from lsp_latency import make_script

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train.py"
        script.write_text(make_script(125), encoding="utf-8")
        lines = script.read_text(encoding="utf-8").count("\n")
        cache = Path(folder) / "cache"
        cold = timed(dslint("--no-cache", str(script)), args.repeat, cwd=Path(folder))
        warm_argv = dslint("--cache-dir", str(cache), str(script))
        timed(warm_argv, 1, cwd=Path(folder))
        warm = timed(warm_argv, args.repeat, cwd=Path(folder))
        python = timed([sys.executable, "-c", "pass"], args.repeat)
    assert cold is not None and warm is not None and python is not None
    out = [
        f"### One {lines}-line training script, end to end (`python -m dslint check`)",
        "",
        "| run | seconds |",
        "|---|---:|",
        f"| cold (`--no-cache`: imports libcst and the rules, parses) | {cold:.3f} |",
        f"| warm (a cache hit: no libcst) | {warm:.3f} |",
        f"| `python -c pass` on this machine, for scale | {python:.3f} |",
        "",
    ]
    print("\n".join(out), flush=True)
    return out


def measure_lsp(args: argparse.Namespace) -> list[str]:
    from lsp_client import LspClient
    from lsp_latency import make_script

    firsts, fulls = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "train.py"
            text = make_script()
            path.write_text(text, encoding="utf-8")
            client = LspClient(cwd=path.parent)
            try:
                client.initialize(path.parent)
                start = time.perf_counter()
                document = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}
                client.notify("textDocument/didOpen", {"textDocument": document})
                client.diagnostics(path.as_uri(), 1, timeout=300)
                firsts.append(time.perf_counter() - start)
                client.wait(
                    lambda m: (
                        m.get("method") == "window/logMessage" and "full lint of train.py v1 " in m["params"]["message"]
                    ),
                    timeout=300,
                )
                fulls.append(time.perf_counter() - start)
            finally:
                client.close()
    out = [
        f"### Language server: `didOpen` of a {text.count(chr(10))}-line script (median of {args.repeat})",
        "",
        "| event | ms |",
        "|---|---:|",
        f"| first diagnostics published | {1000 * statistics.median(firsts):.0f} |",
        f"| full lint published | {1000 * statistics.median(fulls):.0f} |",
        "",
    ]
    print("\n".join(out), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deepspeed", type=Path, default=None, help="DeepSpeed's source (default: the installed one)")
    parser.add_argument("--transformers", type=Path, default=None, help="an unpacked transformers wheel")
    parser.add_argument(
        "--realcode", type=Path, default=None, help="the folder holding the real projects of CORPUS (OWNER__NAME@*)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peer-repeat", type=int, default=1, help="runs of flake8, TorchFix and Fixit")
    parser.add_argument("--peer-timeout", type=float, default=600.0)
    parser.add_argument("--peers-venv", type=Path, default=Path("/work/peers"))
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument(
        "--skip-peers", action="store_true", help="dslint and ruff only (flake8, TorchFix, Fixit not run)"
    )
    parser.add_argument("--section", default="bench_check", help="the marked section of docs/benchmarks.md to replace")
    args = parser.parse_args()
    started = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    compile_bytecode()
    sections: list[str] = []
    trees = [("DeepSpeed's source", [args.deepspeed or deepspeed_source()])]
    if args.transformers:
        trees.append(("transformers wheel", [args.transformers]))
    if args.realcode:
        trees.append(("real DeepSpeed projects (the twelve of `CORPUS`)", corpus(args.realcode)))
    for label, tree in trees:
        sections += measure_tree(label, tree, args)
    sections += measure_script(args)
    sections += measure_lsp(args)
    ended = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    command = " ".join(["python benchmarks/bench_check.py", *sys.argv[1:]])
    if args.no_write:
        return
    write(sections, command, started, ended, args.section)


def compile_bytecode() -> None:
    """dslint's modules compiled to bytecode first, as an install has them (pip compiles a wheel's modules when it
    installs them): a source checkout run with `PYTHONDONTWRITEBYTECODE` set (this workplace sets it) would
    otherwise compile every module it imports on every timed run, about 0.25 s that no user pays. The peers are
    installed packages, theirs compiled already."""
    compileall.compile_dir(str(ROOT / "dslint"), quiet=1)


def write(sections: list[str], command: str, started: str, ended: str, section: str = "bench_check") -> None:
    target = ROOT / "docs" / "benchmarks.md"
    text = target.read_text(encoding="utf-8") if target.exists() else ""
    marker_start, marker_end = f"<!-- {section}: start -->", f"<!-- {section}: end -->"
    table = "\n".join(
        [
            marker_start,
            f"Produced by `{command}` on {os.cpu_count()} cores "
            f"(median of the runs; ratios are to ruff in the same run).",
            "",
            f"Load: `{started}` at the start, `{ended}` at the end.",
            "",
            *sections,
            marker_end,
        ]
    )
    if marker_start in text and marker_end in text:
        text = text[: text.index(marker_start)] + table + text[text.index(marker_end) + len(marker_end) :]
    else:
        text = (text or "# Benchmarks\n\n") + table + "\n"
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
