"""Forecast vs measured for the H200 runs in h200/: the measurements are runtime_check's reports from
run_gpu.sh; the forecast is recomputed with the dslint in this checkout (it needs no GPU), so the table shows
the current forecast against the same measured peaks (and draws them: compare_<run>.svg). Run from the repository
root:

    python docs/evidence/memory/compare.py > docs/evidence/memory/compare.txt
"""

from __future__ import annotations

import json
from pathlib import Path

from dslint.memory.plot import Panel, write
from runtime_check.forecast import FORECAST_PHASES, comparison, forecasts, measured

HERE = Path(__file__).resolve().parent
SCRIPT = "fixtures/projects/memory/train.py"
RUNS = ("zero2", "zero3", "zero3_offload", "zero2_load")
GIB = float(1 << 30)


def main() -> None:
    table: dict[str, list[dict[str, object]]] = {}
    for name in RUNS:
        doc = json.loads((HERE / "h200" / f"{name}.json").read_text(encoding="utf-8"))
        args = list(doc["script_args"])
        found = forecasts(SCRIPT, args, 1, _fixed(doc), None)
        rows = comparison(found, {"original": doc["original"], "fixed": doc["fixed"]})
        table[name] = rows
        # Without --init_weights the script's `if args.init_weights:` load does not run: the forecast without the
        # `if` branches it counts is the one that applies.
        branch = "--init_weights" in args
        suffix = "" if branch else "_if_branches_skipped"
        print(
            f"{name}: {' '.join(args)} (GiB; the load under `if args.init_weights:` "
            f"{'runs' if branch else 'does not run: forecast without it'})"
        )
        header = f"{'GPU forecast':>13}{'measured':>10}{'error':>8}   {'host forecast':>13}{'RSS':>8}"
        print(f"  {'run':<9}{'phase':<6}{header}")
        for row in rows:
            gpu = row["forecast_gpu_bytes" + suffix]
            error = row["gpu_error" + suffix]
            host = row["forecast_host_bytes" + suffix] if suffix else row["forecast_host_bytes"]
            row["applies"] = {"gpu_bytes": gpu, "gpu_error": error, "host_bytes": host}
            print(
                f"  {row['run']:<9}{row['phase']:<6}{_g(gpu):>13}{_g(row['measured_gpu_bytes']):>10}"
                f"{_p(error):>8}   {_g(host):>13}{_g(row['measured_rss_bytes']):>8}"
            )
        print()
        series: dict[str, dict[str, tuple[int | None, int | None]]] = {}
        for label in ("original", "fixed"):
            series[label] = {phase: measured(doc[label], phase) for phase in FORECAST_PHASES}
        for label in ("original", "fixed"):
            series[f"forecast {label}"] = {
                str(row["phase"]): (row["applies"]["gpu_bytes"], row["applies"]["host_bytes"])  # type: ignore[index]
                for row in rows
                if row["run"] == label
            }
        write(HERE / f"compare_{name}.svg", [Panel(f"{name} on one H200 (GiB)", tuple(FORECAST_PHASES), series)])
    (HERE / "compare.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")


def _fixed(doc: dict[str, object]) -> str:
    """The fixed script's text: the original with the report's unified diff applied (one-line hunks)."""
    original = Path(SCRIPT).read_text(encoding="utf-8").splitlines(keepends=True)
    fix = doc["fix"]
    assert isinstance(fix, dict)
    removed = [
        line[1:]
        for line in str(fix["diff"]).splitlines(keepends=True)
        if line.startswith("-") and not line.startswith("---")
    ]
    added = [
        line[1:]
        for line in str(fix["diff"]).splitlines(keepends=True)
        if line.startswith("+") and not line.startswith("+++")
    ]
    text = "".join(original)
    for old, new in zip(removed, added, strict=True):
        text = text.replace(old, new, 1)
    return text


def _g(value: object) -> str:
    return f"{float(value) / GIB:.2f}" if isinstance(value, (int, float)) else "-"


def _p(value: object) -> str:
    return f"{float(value) * 100:+.0f}%" if isinstance(value, (int, float)) else "-"


if __name__ == "__main__":
    main()
