"""Comparing the two runs: per-run summaries, the verdict, the JSON document and the text table."""

from __future__ import annotations

import importlib.metadata
import platform
from dataclasses import dataclass
from typing import Any

import dslint
from runtime_check.harness import PHASES
from runtime_check.launch import ChildResult

MIB = 1024 * 1024
ERROR_SUMMARY = 240


@dataclass(frozen=True)
class Tolerance:
    """A phase got worse when fixed - original > max(absolute, relative x original)."""

    absolute_bytes: int
    relative: float

    def allows(self, original: int, fixed: int) -> bool:
        return fixed - original <= max(self.absolute_bytes, self.relative * original)

    def as_json(self) -> dict[str, Any]:
        return {"absolute_bytes": self.absolute_bytes, "relative": self.relative}


# The CUDA caching allocator is deterministic for the same sequence of allocations: only a small slack is needed.
# RSS moves with the page cache of shared libraries, malloc arenas and lazily imported modules: measured run-to-run
# spread of the CPU demo is documented in docs/runtime_check.md; the slack is set well above it.
TOLERANCES = {
    "peak_allocated_bytes": Tolerance(absolute_bytes=8 * MIB, relative=0.01),
    "peak_rss_bytes": Tolerance(absolute_bytes=32 * MIB, relative=0.05),
}
METRIC_LABELS = {
    "peak_allocated_bytes": "GPU peak allocated",
    "peak_reserved_bytes": "GPU peak reserved",
    "peak_rss_bytes": "CPU peak RSS",
    "seconds": "time (s)",
    "nvml:process_used_bytes": "GPU process, NVML (end)",
    "nvml:context_bytes": "CUDA context, NVML (end)",
}
NVML_METRICS = ("nvml:process_used_bytes", "nvml:context_bytes")


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version(), "dslint": dslint.__version__}
    for name in ("torch", "deepspeed"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def rank_error(report: dict[str, Any] | None, result: ChildResult, timeout: float) -> str | None:
    """Why one rank's run does not count as having run, or None."""
    if result.timed_out:
        where = f" in phase {report.get('current_phase')}" if report else ""
        return f"timed out after {timeout:g} s{where}; its process group was killed"
    if report is None:
        return f"the harness wrote no report (exit status {result.returncode})"
    exception = report.get("exception")
    if exception:
        message = " ".join(str(exception.get("message", "")).split())  # PyTorch puts the point on the second line
        if len(message) > ERROR_SUMMARY:
            message = message[: ERROR_SUMMARY - 3] + "..."
        return f"{exception.get('type')}: {message} (in phase {exception.get('phase')})"
    if report.get("exit_code") not in (0, None):
        return f"the script exited with status {report.get('exit_code')}"
    if report.get("status") == "running":
        return f"the process ended without finishing (exit status {result.returncode}) in {report.get('current_phase')}"
    if not report.get("initialize_called"):
        return "deepspeed.initialize was never called"
    if result.returncode not in (0, None):  # the rank finished and reported; the launcher (or a peer) failed after
        return f"the launcher exited with status {result.returncode} after this rank finished"
    return None


def summarize(result: ChildResult, timeout: float) -> dict[str, Any]:
    ranks: list[dict[str, Any]] = []
    for rank in range(result.nproc):
        report = next((r for r in result.reports if (r.get("rank") or 0) == rank), None)
        error = rank_error(report, result, timeout)
        ranks.append(
            {
                "rank": rank,
                "ran": error is None,
                "error": error,
                "status": report.get("status") if report else None,
                "exception": report.get("exception") if report else None,
                "initialize_called": bool(report and report.get("initialize_called")),
                "steps_completed": report.get("steps_completed", 0) if report else 0,
                "rss_method": report.get("rss_method") if report else None,
                "nvml": report.get("nvml") if report else None,
                "phases": {p["name"]: p for p in report.get("phases", [])} if report else {},
                "device": report.get("device") if report else None,
                "versions": report.get("versions") if report else None,
            }
        )
    first = ranks[0]
    errors = [f"rank {r['rank']}: {r['error']}" if result.nproc > 1 else r["error"] for r in ranks if r["error"]]
    summary: dict[str, Any] = {
        "ran": not errors,
        "exit_code": result.returncode,
        "timed_out": result.timed_out,
        "seconds": result.seconds,
        "errors": errors,
        "status": first["status"],
        "exception": first["exception"],
        "initialize_called": first["initialize_called"],
        "steps_completed": first["steps_completed"],
        "rss_method": first["rss_method"],
        "nvml": first["nvml"],
        "phases": first["phases"],
        "device": first["device"],
        "versions": first["versions"],
    }
    if result.nproc > 1:
        summary["ranks"] = {str(r["rank"]): r for r in ranks}
        summary["device_totals"] = device_totals(ranks)
    if errors:
        summary["output_tail"] = result.output_tail
    return summary


def device_totals(ranks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per phase and physical GPU, the sum over ranks of each rank's peak allocated bytes there: what piles onto
    cuda:0 when every rank puts tensors on it. An upper bound (the ranks' peaks need not coincide); phases that
    some rank did not finish are marked."""
    totals: dict[str, dict[str, Any]] = {}
    for name in PHASES:
        phases = [r["phases"].get(name) for r in ranks]
        if not any(phases):
            continue
        devices: dict[str, int] = {}
        for phase in phases:
            for device, peaks in (phase or {}).get("devices", {}).items():
                devices[device] = devices.get(device, 0) + int(peaks["peak_allocated_bytes"])
        completed = all(p is not None and p.get("completed") for p in phases)
        totals[name] = {"completed": completed, "peak_allocated_bytes": devices}
    return totals


def _rank_phases(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ranks = summary.get("ranks")
    if ranks:
        return {rank: data["phases"] for rank, data in ranks.items()}
    return {"0": summary["phases"]}


def metric_for(original: dict[str, Any], fixed: dict[str, Any]) -> str:
    """GPU allocated bytes when both runs measured them, else RSS: the fix targets accelerator memory, and a fix
    that moves a load to the CPU rightly grows RSS there."""
    for run in (original, fixed):
        for phases in _rank_phases(run).values():
            if any(p.get("peak_allocated_bytes") is not None for p in phases.values()):
                continue
            return "peak_rss_bytes"
    return "peak_allocated_bytes"


def change(original: int | float | None, fixed: int | float | None) -> dict[str, Any] | None:
    if original is None or fixed is None:
        return None
    delta = fixed - original
    percent = round(100.0 * delta / original, 2) if original else None
    return {"original": original, "fixed": fixed, "delta": delta, "percent": percent}


def verdict(original: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    metric = metric_for(original, fixed)
    tolerance = TOLERANCES[metric]
    worse: list[dict[str, Any]] = []
    compared: list[str] = []
    original_ranks, fixed_ranks = _rank_phases(original), _rank_phases(fixed)
    for rank, fixed_phases in fixed_ranks.items():
        original_phases = original_ranks.get(rank, {})
        for name in PHASES:
            a, b = original_phases.get(name), fixed_phases.get(name)
            # A phase the original did not finish (it crashed there) has no peak to hold the fixed run to.
            if not a or not b or not a.get("completed") or not b.get("completed"):
                continue
            if a.get(metric) is None or b.get(metric) is None:
                continue
            compared.append(name if len(fixed_ranks) == 1 else f"rank {rank} {name}")
            if not tolerance.allows(a[metric], b[metric]):
                entry = {"phase": name, **(change(a[metric], b[metric]) or {})}
                if len(fixed_ranks) > 1:
                    entry["rank"] = int(rank)
                worse.append(entry)
    if metric == "peak_allocated_bytes":
        worse.extend(_worse_devices(original, fixed, tolerance, compared))
    load_a = original["phases"].get("load", {}).get(metric)
    load_b = fixed["phases"].get("load", {}).get(metric)
    load = change(load_a, load_b)
    if load is not None:  # a run that died in the load phase has a partial peak there: say so
        load["completed"] = bool(
            original["phases"]["load"].get("completed") and fixed["phases"]["load"].get("completed")
        )
    host = host_growth(original, fixed)
    reasons: list[str] = []
    if not fixed["ran"]:
        reasons.append("the fixed script did not run: " + "; ".join(fixed["errors"]))
    for entry in worse:
        where = f"rank {entry['rank']} " if "rank" in entry else ""
        if "device" in entry:
            where = f"cuda:{entry['device']} (all ranks) "
        reasons.append(
            f"{where}phase {entry['phase']} got worse: {METRIC_LABELS[metric]} {_bytes(entry['original'])} -> "
            f"{_bytes(entry['fixed'])} ({_signed_bytes(entry['delta'])})"
        )
    return {
        "ok": fixed["ran"] and not worse,
        "fixed_ran": fixed["ran"],
        "original_ran": original["ran"],
        "no_phase_worse": not worse,
        "metric": metric,
        "tolerance": tolerance.as_json(),
        "phases_compared": compared,
        "worse_phases": worse,
        "load_phase": load,
        "host_growth": host,
        "reasons": reasons,
    }


def host_growth(original: dict[str, Any], fixed: dict[str, Any]) -> list[dict[str, Any]]:
    """Phases whose peak RSS grew beyond the RSS tolerance in the fixed run: what a fix that moves a load from
    the GPU to the CPU costs in host memory, per rank and summed over the node's ranks (not a failure)."""
    tolerance = TOLERANCES["peak_rss_bytes"]
    original_ranks, fixed_ranks = _rank_phases(original), _rank_phases(fixed)
    grown: list[dict[str, Any]] = []
    for name in PHASES:
        deltas: list[int] = []
        for rank, phases in fixed_ranks.items():
            a, b = original_ranks.get(rank, {}).get(name), phases.get(name)
            if not a or not b or not a.get("completed") or not b.get("completed"):
                continue
            before, after = a.get("peak_rss_bytes"), b.get("peak_rss_bytes")
            if isinstance(before, int) and isinstance(after, int) and not tolerance.allows(before, after):
                deltas.append(after - before)
        if deltas:
            grown.append({"phase": name, "per_rank": max(deltas), "ranks": len(fixed_ranks), "per_node": sum(deltas)})
    return grown


def _worse_devices(
    original: dict[str, Any], fixed: dict[str, Any], tolerance: Tolerance, compared: list[str]
) -> list[dict[str, Any]]:
    totals_a, totals_b = original.get("device_totals") or {}, fixed.get("device_totals") or {}
    worse: list[dict[str, Any]] = []
    for name in PHASES:
        a, b = totals_a.get(name), totals_b.get(name)
        if not a or not b or not a["completed"] or not b["completed"]:
            continue
        for device in sorted(set(a["peak_allocated_bytes"]) | set(b["peak_allocated_bytes"]), key=int):
            before = a["peak_allocated_bytes"].get(device, 0)
            after = b["peak_allocated_bytes"].get(device, 0)
            compared.append(f"cuda:{device} {name}")
            if not tolerance.allows(before, after):
                worse.append({"phase": name, "device": int(device), **(change(before, after) or {})})
    return worse


def document(
    script: str,
    args: list[str],
    options: dict[str, Any],
    fix: dict[str, Any],
    original: dict[str, Any],
    fixed: dict[str, Any],
) -> dict[str, Any]:
    device = fixed.get("device") or original.get("device")
    return {
        "script": script,
        "script_args": args,
        "options": options,
        "versions": versions(),
        "device": device,
        "fix": fix,
        "original": original,
        "fixed": fixed,
        "errors": {"original": original["errors"], "fixed": fixed["errors"]},
        "verdict": verdict(original, fixed),
    }


def failure_document(script: str, args: list[str], options: dict[str, Any], message: str) -> dict[str, Any]:
    return {
        "script": script,
        "script_args": args,
        "options": options,
        "versions": versions(),
        "device": None,
        "fix": None,
        "original": None,
        "fixed": None,
        "errors": {"runtime_check": [message]},
        "verdict": {"ok": False, "fixed_ran": False, "reasons": [message]},
    }


# text -----------------------------------------------------------------------------------------------------------------
def _bytes(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, size in (("GiB", 1024**3), ("MiB", MIB), ("KiB", 1024)):
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value:.0f} B"


def _signed_bytes(value: float) -> str:
    return ("+" if value > 0 else "") + _bytes(value)


def _cell(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if metric == "seconds" else _bytes(value)


def _value(phase: dict[str, Any] | None, metric: str) -> float | None:
    """A phase's measure; `device:N` is the peak allocated on cuda:N by this rank (a device not its own)."""
    if phase is None:
        return None
    if metric.startswith("device:"):
        device = phase.get("devices", {}).get(metric.split(":")[1])
        return device["peak_allocated_bytes"] if device else None
    if metric.startswith("nvml"):  # nvml:FIELD on the rank's own device, nvml_context:N on device N
        kind, _, rest = metric.partition(":")
        own = str(phase.get("device_index"))
        device, field = (own, rest) if kind == "nvml" else (rest, "context_bytes")
        value = (phase.get("nvml") or {}).get(device, {}).get(field)
        return float(value) if isinstance(value, (int, float)) else None
    value = phase.get(metric)
    return float(value) if isinstance(value, (int, float)) else None


def _total_rows(totals_a: dict[str, Any], totals_b: dict[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for name in PHASES:
        a, b = totals_a.get(name), totals_b.get(name)
        if not a and not b:
            continue
        devices_a = a["peak_allocated_bytes"] if a else {}
        devices_b = b["peak_allocated_bytes"] if b else {}
        label = f"all {name}"
        for device in sorted(set(devices_a) | set(devices_b), key=int):
            va, vb = devices_a.get(device, 0) if a else None, devices_b.get(device, 0) if b else None
            diff = change(va, vb)
            delta = _signed_bytes(diff["delta"]) if diff else "-"
            percent = f"{diff['percent']:+.1f}%" if diff and diff["percent"] is not None else "-"
            mark_a = "" if not a or a["completed"] else " !"
            mark_b = "" if not b or b["completed"] else " !"
            rows.append(
                (label, f"GPU cuda:{device} all ranks", _cell("", va) + mark_a, _cell("", vb) + mark_b, delta, percent)
            )
            label = ""
    return rows


def table(doc: dict[str, Any]) -> str:
    original, fixed = doc["original"], doc["fixed"]
    metrics = (
        ["peak_allocated_bytes", "peak_reserved_bytes"] if doc["verdict"]["metric"] == "peak_allocated_bytes" else []
    )
    metrics += ["peak_rss_bytes", "seconds"]
    rows: list[tuple[str, ...]] = [("phase", "measure", "original", "fixed", "delta", "%")]
    ranks = sorted(set(_rank_phases(original)) | set(_rank_phases(fixed)), key=int)
    for rank in ranks:
        phases_a = _rank_phases(original).get(rank, {})
        phases_b = _rank_phases(fixed).get(rank, {})
        for name in PHASES:
            a, b = phases_a.get(name), phases_b.get(name)
            if a is None and b is None:
                continue
            label = name if len(ranks) == 1 else f"r{rank} {name}"
            own = {str((run or {}).get("device_index")) for run in (a, b)}
            others = sorted({d for p in (a, b) if p for d in p.get("devices", {})} - own, key=int)
            # NVML: this process's memory and CUDA context on its own device, and any other device it holds a
            # context on (a rank that touched cuda:0 before its device was set)
            contexts = sorted(
                {d for p in (a, b) if p for d, v in (p.get("nvml") or {}).items() if v.get("context_bytes")} - own,
                key=int,
            )
            nvml = [m for m in NVML_METRICS if _value(a, m) is not None or _value(b, m) is not None]
            extra = [f"device:{d}" for d in others] + [f"nvml_context:{d}" for d in contexts]
            for metric in metrics + nvml + extra:
                va = _value(a, metric)
                vb = _value(b, metric)
                mark_a = "" if not a or a.get("completed") else " !"
                mark_b = "" if not b or b.get("completed") else " !"
                diff = change(va, vb)
                delta = "-"
                percent = "-"
                if diff is not None:
                    delta = f"{diff['delta']:+.2f}" if metric == "seconds" else _signed_bytes(diff["delta"])
                    percent = f"{diff['percent']:+.1f}%" if diff["percent"] is not None else "-"
                where = metric.split(":")[-1]
                measure = METRIC_LABELS.get(metric) or (
                    f"CUDA context cuda:{where}, NVML" if metric.startswith("nvml") else f"GPU cuda:{where} allocated"
                )
                rows.append(
                    (
                        label,
                        measure,
                        _cell(metric, va) + mark_a,
                        _cell(metric, vb) + mark_b,
                        delta,
                        percent,
                    )
                )
                label = ""
    if len(ranks) > 1 and "peak_allocated_bytes" in metrics:
        rows.extend(_total_rows(original.get("device_totals") or {}, fixed.get("device_totals") or {}))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])] + [
            c.rjust(w) for c, w in zip(row[2:], widths[2:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render(doc: dict[str, Any]) -> str:
    verdict_ = doc["verdict"]
    if doc["original"] is None:
        return "runtime_check: " + "; ".join(verdict_["reasons"])
    parts = [f"runtime_check: {doc['script']}"]
    applied = doc["fix"]["applied"]
    parts.append(
        "fixes applied: " + ", ".join(f"{d['code']} (line {d['line']})" for d in applied)
        if applied
        else "fixes applied: -"
    )
    device = doc.get("device") or {}
    parts.append(f"device: {device.get('name', '?')} ({device.get('type', '?')})")
    parts.append("")
    parts.append(table(doc))
    parts.append("")
    if any(not p.get("completed") for run in (doc["original"], doc["fixed"]) for p in run["phases"].values()):
        parts.append("! = phase not finished (the run stopped there): its peak covers the part that ran")
    if (doc.get("device") or {}).get("type") == "cuda" or any(
        run.get("device") and run["device"].get("type") == "cuda" for run in (doc["original"], doc["fixed"])
    ):
        statuses = {str(run.get("nvml")) for run in (doc["original"], doc["fixed"]) if run.get("nvml")}
        unmeasured = sorted(s for s in statuses if s != "measured")
        if unmeasured:
            parts.append("CUDA context (NVML): " + "; ".join(unmeasured))
        else:
            parts.append(
                "NVML rows: what the driver says the process holds at the phase's end (not a peak); the context row"
                " is that minus the allocator's reserved bytes"
            )
    for label in ("original", "fixed"):
        run = doc[label]
        state = "ran" if run["ran"] else "failed: " + "; ".join(run["errors"])
        parts.append(f"{label}: {state} ({run['steps_completed']} step(s), {run['seconds']:.1f} s)")
    load = verdict_.get("load_phase")
    if load:
        percent = f", {load['percent']:+.1f}%" if load["percent"] is not None else ""
        partial = "" if load.get("completed", True) else "; a run did not finish this phase, not compared"
        parts.append(
            f"load phase ({METRIC_LABELS[verdict_['metric']]}): {_bytes(load['original'])} -> {_bytes(load['fixed'])}"
            f" ({_signed_bytes(load['delta'])}{percent}{partial})"
        )
    for grown in verdict_.get("host_growth") or []:
        parts.append(
            f"host memory, phase {grown['phase']}: +{_bytes(grown['per_rank'])} RSS per rank in the fixed run"
            f" ({grown['ranks']} rank(s) on the node: +{_bytes(grown['per_node'])} in all)"
        )
    if verdict_["ok"]:
        parts.append("verdict: OK: the fixed script ran and no phase got worse")
    else:
        parts.append("verdict: FAIL: " + "; ".join(verdict_["reasons"]))
    return "\n".join(parts)
