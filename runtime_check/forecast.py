"""The forecast beside the measurement: what `dslint memory` predicts for the original and the fixed script at the
world size runtime_check uses, the dry run (`--dry-run`: no child runs, no GPU), and the plot (`--plot`).

Phases line up as follows: the forecast's `init` covers everything up to initialize's return, so it is compared
with the larger of the measured `setup` and `init` peaks; `load` and `step` are compared as they are. GPU: the
peak allocated on cuda:0 (with several ranks, the sum over ranks of what each put there: the worst GPU). Host:
peak RSS of rank 0, which also holds the Python process itself (interpreter, torch, CUDA libraries: a GiB or
more) that no forecast of model states counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dslint.memory.plot import Panel, write
from dslint.memory.project import batch_check, script_forecast
from dslint.memory.render import render_launch, size

FORECAST_PHASES = {"init": ("setup", "init"), "load": ("load",), "step": ("step",)}


def forecasts(
    script: str, script_args: list[str], nproc: int, fixed_text: str | None, params: int | None
) -> dict[str, Any]:
    original = script_forecast(script, script_args, nproc, params=params)
    result: dict[str, Any] = {"original": original}
    result["fixed"] = script_forecast(script, script_args, nproc, fixed_text, params) if fixed_text else None
    result["batch"] = batch_check(_absolute_config(original), nproc)
    return result


def _absolute_config(entry: dict[str, Any]) -> str | None:
    config = entry.get("config")
    return str(config) if config else None


def measured(summary: dict[str, Any] | None, phase: str) -> tuple[int | None, int | None]:
    """(GPU bytes on cuda:0, host RSS of rank 0) for a forecast phase, from a run's summary."""
    if not summary or not summary.get("phases"):
        return None, None
    names = FORECAST_PHASES[phase]
    gpu: int | None = None
    totals = summary.get("device_totals") or {}
    for name in names:
        value: int | None
        if totals.get(name):
            value = totals[name]["peak_allocated_bytes"].get("0")
        else:
            value = (summary["phases"].get(name) or {}).get("peak_allocated_bytes")
        if isinstance(value, int):
            gpu = value if gpu is None else max(gpu, value)
    rss: int | None = None
    for name in names:
        value = (summary["phases"].get(name) or {}).get("peak_rss_bytes")
        if isinstance(value, int):
            rss = value if rss is None else max(rss, value)
    return gpu, rss


def comparison(doc_forecast: dict[str, Any], runs: Mapping[str, dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Per run and phase: forecast and measured, GPU and host, and the forecast's error (forecast / measured - 1)."""
    rows: list[dict[str, Any]] = []
    for label in ("original", "fixed"):
        entry = doc_forecast.get(label)
        phases = (entry or {}).get("phases")
        if not phases:
            continue
        for phase, value in phases.items():
            gpu, rss = measured(runs.get(label), phase)
            branches = [item for item in value["added"] if item.get("conditional")]
            skipped = {
                where: value[f"{where}_bytes"] - sum(item["bytes"] for item in branches if item["on"] == where)
                for where in ("gpu", "host")
            }
            rows.append(
                {
                    "run": label,
                    "phase": phase,
                    "forecast_gpu_bytes": value["gpu_bytes"],
                    # the forecast when no `if` branch it counted runs (a load under `if args.init_weights:`)
                    "forecast_gpu_bytes_if_branches_skipped": skipped["gpu"],
                    "gpu_error_if_branches_skipped": _error(skipped["gpu"], gpu),
                    "forecast_host_bytes_if_branches_skipped": skipped["host"],
                    "measured_gpu_bytes": gpu,
                    "gpu_error": _error(value["gpu_bytes"], gpu),
                    "forecast_host_bytes": value["host_bytes"],
                    "measured_rss_bytes": rss,
                }
            )
    return rows


def _error(forecast: int, measured_value: int | None) -> float | None:
    if not measured_value:
        return None
    return round(forecast / measured_value - 1, 4)


def render_comparison(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "forecast: none (see the forecast's reasons in the JSON report)"
    lines = ["forecast vs measured (GPU: cuda:0 peak allocated; host: rank 0's peak RSS, the process itself included):"]
    header = f"  {'run':<9}{'phase':<6}{'GPU forecast':>14}{'measured':>12}{'error':>9}{'host forecast':>15}{'RSS':>12}"
    lines.append(header)
    for row in rows:
        error = f"{row['gpu_error'] * 100:+.0f}%" if row["gpu_error"] is not None else "-"
        lines.append(
            f"  {row['run']:<9}{row['phase']:<6}{size(row['forecast_gpu_bytes']):>14}"
            f"{size(row['measured_gpu_bytes']):>12}{error:>9}{size(row['forecast_host_bytes']):>15}"
            f"{size(row['measured_rss_bytes']):>12}"
        )
    skipped = [row for row in rows if row["forecast_gpu_bytes_if_branches_skipped"] != row["forecast_gpu_bytes"]]
    for row in skipped:
        error = row["gpu_error_if_branches_skipped"]
        shown = f"{error * 100:+.0f}%" if error is not None else "-"
        lines.append(
            f"  {row['run']} {row['phase']}: {size(row['forecast_gpu_bytes_if_branches_skipped'])} on the GPU "
            f"({shown}) if the `if` branches the forecast counts do not run"
        )
    lines.append("  activations are not forecast: the step's measured peak holds them")
    return "\n".join(lines)


def render_dry_run(
    script: str, nproc: int, diff: str | None, reason: str | None, doc_forecast: dict[str, Any], steps: int
) -> str:
    out = [f"runtime_check --dry-run: {script}", ""]
    if diff:
        out.append("The fixes it would run (a diff of the fixed copy; the script is never modified):")
        out.append(diff.rstrip("\n"))
    else:
        out.append(f"No fixed script: {reason}. A real run would exit 1.")
    out.append("")
    launcher = "python (one process)" if nproc == 1 else f"torchrun --nproc-per-node={nproc} (one node)"
    out.append(f"world size {nproc}: {launcher}; {steps} step(s) per run, original then fixed")
    batch = doc_forecast["batch"]
    if batch["config"] is None:
        out.append("batch size: no config file found in the script's arguments or its initialize call")
    else:
        values = batch["values"] or {}
        shown = ", ".join(f"{key} {value}" for key, value in values.items() if value is not None) or "none literal"
        if batch["ok"]:
            out.append(f"batch size at world size {nproc}: holds ({batch['config']}: {shown})")
        else:
            out.append(f"batch size at world size {nproc}: DeepSpeed would stop both runs ({batch['config']}: {shown})")
            out.extend(f"  {finding}" for finding in batch["findings"])
    out.append("")
    for label in ("original", "fixed"):
        entry = doc_forecast.get(label)
        if entry is None:
            continue
        out.append(f"forecast, {label}:")
        out.append(render_launch(entry).rstrip("\n"))
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def plot(path: str, doc_forecast: dict[str, Any], runs: Mapping[str, dict[str, Any] | None]) -> None:
    """Phases, GPU and host: original and fixed as measured, and the forecast of each."""
    series: dict[str, dict[str, tuple[int | None, int | None]]] = {}
    for label in ("original", "fixed"):
        if runs.get(label):
            series[label] = {phase: measured(runs[label], phase) for phase in FORECAST_PHASES}
    for label in ("original", "fixed"):
        phases = (doc_forecast.get(label) or {}).get("phases")
        if phases:
            series[f"forecast {label}"] = {
                phase: (value["gpu_bytes"], value["host_bytes"]) for phase, value in phases.items()
            }
    title = str((doc_forecast.get("original") or {}).get("script") or "runtime_check")
    write(path, [Panel(title, tuple(FORECAST_PHASES), series)])
