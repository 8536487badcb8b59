"""`python -m runtime_check SCRIPT [--json REPORT] [--steps N] [--timeout S] [--unsafe-fixes] [--nproc N]
[--dry-run] [--params 7B] [--plot FILE] [-- SCRIPT_ARGS...]`.

Exit 0: the fixed script ran and no phase got worse (or `--dry-run`: nothing ran); 1: otherwise (including "the
fixer changes nothing"); 2: usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dslint.memory.params import parse_size
from runtime_check.fixed_script import NothingToRun, make_fixed
from runtime_check.forecast import comparison, forecasts, plot, render_comparison, render_dry_run
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
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="run nothing: print the fixes as a diff, the world size, the memory forecast and the batch-size check",
    )
    p.add_argument("--params", help="the model's parameter count for the forecast (7B, 125M): overrides the script's")
    p.add_argument("--plot", metavar="FILE", help="draw the phases (GPU and host): measured and forecast (.svg/.png)")
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
    params = None
    if args.params is not None:
        try:
            params = parse_size(args.params)
        except ValueError as error:
            p.error(f"--params: {error}")
    if args.plot is not None and not args.plot.lower().endswith((".svg", ".png")):
        p.error("--plot writes .svg or .png")
    script = script.resolve()
    if args.dry_run:
        return dry_run(script, script_args, args, params)
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
    doc["forecast"] = _forecast(script, script_args, args.nproc, fixed.text, params, results)
    _emit(doc, args.json_path)
    if args.plot and "comparison" in doc["forecast"]:
        try:
            plot(args.plot, doc["forecast"], results)
        except (ValueError, OSError) as error:
            print(f"runtime_check: --plot: {error}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK if doc["verdict"]["ok"] else EXIT_FAIL


def _forecast(
    script: Path, script_args: list[str], nproc: int, fixed_text: str, params: int | None,
    results: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """The forecast beside the measurement; a forecast that fails is reported, never the run's failure."""
    try:
        found = forecasts(str(script), script_args, nproc, fixed_text, params)
    except Exception as error:  # the measurement stands on its own
        return {"error": f"{type(error).__name__}: {error}"}
    found["comparison"] = comparison(found, results)
    return found


def dry_run(script: Path, script_args: list[str], args: argparse.Namespace, params: int | None) -> int:
    """What a run would do, without running anything (no GPU needed): exit 0."""
    try:
        fixed = make_fixed(script, unsafe=args.unsafe_fixes)
        diff, reason, text = fixed.diff(), None, fixed.text
    except NothingToRun as nothing:
        fixed, diff, reason, text = None, None, str(nothing), None
    found = forecasts(str(script), script_args, args.nproc, text, params)
    print(render_dry_run(str(script), args.nproc, diff, reason, found, args.steps), end="")
    if args.json_path:
        doc = {
            "dry_run": True,
            "script": str(script),
            "script_args": script_args,
            "world_size": args.nproc,
            "fix": None if fixed is None else {
                "applied": [{"code": d.code, "line": d.start.line, "message": d.message} for d in fixed.applied],
                "diff": diff,
            },
            "no_fix_reason": reason,
            "forecast": found,
        }  # fmt: skip
        Path(args.json_path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if args.plot:
        try:
            plot(args.plot, found, {})
        except (ValueError, OSError) as error:
            print(f"runtime_check: --plot: {error}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK


def _emit(doc: dict[str, Any], json_path: str | None) -> None:
    print(render(doc))
    found = doc.get("forecast")
    if found is not None and "comparison" in found:
        print()
        print(render_comparison(found["comparison"]))
    elif found is not None and "error" in found:
        print(f"forecast: not made ({found['error']})")
    if json_path:
        Path(json_path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
