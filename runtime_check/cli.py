"""`python -m runtime_check SCRIPT [--json REPORT] [--steps N] [--timeout S] [--unsafe-fixes] [-- SCRIPT_ARGS...]`.

Exit 0: the fixed script ran and no phase got worse; 1: otherwise (including "the fixer changes nothing");
2: usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runtime_check.fixed_script import NothingToRun, make_fixed
from runtime_check.launch import Progress, run_child
from runtime_check.report import document, failure_document, render, summarize

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m runtime_check",
        description=(
            "Run a DeepSpeed training script and its dslint-fixed version for a few steps each, "
            "and compare peak memory per phase (setup, init, load, step)."
        ),
        epilog="Arguments after `--` go to the script. Exit 0: fixed ran, no phase worse; 1: otherwise; 2: usage.",
    )
    p.add_argument("script", help="the training script (never modified)")
    p.add_argument("--json", dest="json_path", metavar="REPORT", help="write the JSON report here")
    p.add_argument("--steps", type=int, default=1, help="engine.step() calls to run before stopping (default 1)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run before its process group is killed")
    p.add_argument("--unsafe-fixes", action="store_true", help="apply dslint's unsafe fixes too")
    p.add_argument("--nproc", type=int, default=1, help="ranks per run (more than 1: launched with torchrun)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress indicator")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, script_args = argv[:split], argv[split + 1 :]
    p = parser()
    args = p.parse_args(argv)  # exits 2 on usage errors
    script = Path(args.script)
    if not script.is_file():
        p.error(f"no such script: {args.script}")
    if args.steps < 1:
        p.error("--steps must be at least 1")
    if not args.timeout > 0:
        p.error("--timeout must be positive")
    if args.nproc < 1:
        p.error("--nproc must be at least 1")
    script = script.resolve()
    options: dict[str, Any] = {
        "steps": args.steps,
        "timeout": args.timeout,
        "unsafe_fixes": args.unsafe_fixes,
        "nproc": args.nproc,
    }
    try:
        fixed = make_fixed(script, unsafe=args.unsafe_fixes)
    except NothingToRun as reason:
        doc = failure_document(str(script), script_args, options, str(reason))
        _emit(doc, args.json_path)
        return EXIT_FAIL

    progress = Progress(sys.stderr, enabled=not args.quiet)
    with tempfile.TemporaryDirectory(prefix="runtime_check-") as temporary:
        workdir = Path(temporary)
        fixed_path = workdir / "fixed" / script.name
        fixed_path.parent.mkdir()
        fixed_path.write_bytes(fixed.text.encode(fixed.encoding))
        results = {}
        for label, path in (("original", script), ("fixed", fixed_path)):
            result = run_child(
                label, path, script, script_args, steps=args.steps, timeout=args.timeout, workdir=workdir,
                nproc=args.nproc, progress=progress,
            )  # fmt: skip
            progress.done(label, result)
            results[label] = summarize(result, args.timeout)
    fix_info = {
        "unsafe_fixes": args.unsafe_fixes,
        "applied": [
            {"code": d.code, "line": d.start.line, "message": d.message, "fix": d.fix.message if d.fix else None}
            for d in fixed.applied
        ],
        "remaining": [{"code": d.code, "line": d.start.line, "message": d.message} for d in fixed.remaining],
        "changed_lines": fixed.changed_lines(),
        "diff": fixed.diff(),
    }
    doc = document(str(script), script_args, options, fix_info, results["original"], results["fixed"])
    _emit(doc, args.json_path)
    return EXIT_OK if doc["verdict"]["ok"] else EXIT_FAIL


def _emit(doc: dict[str, Any], json_path: str | None) -> None:
    print(render(doc))
    if json_path:
        Path(json_path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
