"""The frozen forecast (forecast.json, made before any GPU run) against the H200 measurements (measured/*.json).

Per launch and phase: the GPU forecast as frozen, the same without the bytes of `if` branches that did not run
(the `--resume` load), torch's peak allocated bytes on cuda:0, and the error (forecast - measured) / measured; the
host forecast against the peak RSS (which also holds the process itself) and against the peak RSS less the
process's own (BASELINE: ZeRO-1's RSS in the load phase, when no model state is in host memory). Also checks
that the forecast embedded in each runtime_check report (made on the device) equals the frozen one.
Run from the repository root:

    python docs/evidence/memory/holdout/compare.py > docs/evidence/memory/holdout/compare.txt
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GIB = 2**30
BASELINE = ("z1_bf16", "load")
RUNS = {"z1_bf16.json": "z1_bf16", "z2_offload_opt.json": "z2_offload_opt", "z3_offload_all.json": "z3_offload_all"}


def conditional_bytes(phase, on):
    """The bytes the forecast adds for statements inside an `if` (here: the --resume load, not taken)."""
    return sum(a["bytes"] for a in phase["added"] if a["on"] == on and a["conditional"])


def main():
    frozen = json.loads((HERE / "forecast.json").read_text())
    rows = []
    mismatches = []
    base = json.loads((HERE / "measured" / f"{BASELINE[0]}.json").read_text())
    process = base["original"]["phases"][BASELINE[1]]["peak_rss_bytes"]
    head = "launch                 config               phase  GPU forecast  w/o if  measured  error"
    print(head + " | host forecast  w/o if  peak RSS  error  RSS-process  error")
    for launch in frozen:
        config = Path(launch["config"]).name
        run = RUNS[config]
        report = json.loads((HERE / "measured" / f"{run}.json").read_text())
        embedded = report["forecast"]["original"]["phases"]
        for name, phase in launch["phases"].items():
            if embedded[name]["gpu_bytes"] != phase["gpu_bytes"] or embedded[name]["host_bytes"] != phase["host_bytes"]:
                mismatches.append(f"{run} {name}")
            measured = report["original"]["phases"][name]
            gpu = phase["gpu_bytes"]
            gpu_run = gpu - conditional_bytes(phase, "gpu")
            host = phase["host_bytes"]
            host_run = host - conditional_bytes(phase, "host")
            got_gpu = measured["peak_allocated_bytes"]
            got_rss = measured["peak_rss_bytes"]
            gpu_error = (gpu_run - got_gpu) / got_gpu
            host_error = (host_run - got_rss) / got_rss
            own = got_rss - process
            own_error = (host_run - own) / own if own > 0.05 * GIB else None
            rows.append({"launch": launch["launcher"], "config": config, "phase": name, "gpu_forecast": gpu,
                         "gpu_forecast_run": gpu_run, "gpu_measured": got_gpu, "gpu_error": round(gpu_error, 4),
                         "host_forecast": host, "host_forecast_run": host_run, "rss_measured": got_rss,
                         "host_error": round(host_error, 4), "rss_less_process": own,
                         "host_error_less_process": None if own_error is None else round(own_error, 4)})  # fmt: skip
            print(f"{Path(launch['launcher']).name:22} {config:20} {name:5} {gpu / GIB:12.2f} {gpu_run / GIB:7.2f} "
                  f"{got_gpu / GIB:9.2f} {gpu_error:+6.0%} | {host / GIB:13.2f} {host_run / GIB:7.2f} "
                  f"{got_rss / GIB:9.2f} {host_error:+6.0%} {own / GIB:12.2f} "
                  + ("     -" if own_error is None else f"{own_error:+6.0%}"))  # fmt: skip
    print("GiB; errors use the forecast without the `if` branch (the --resume load did not run);")
    print(f"RSS-process: the peak RSS less {process / GIB:.2f} GiB, the RSS of {BASELINE[0]}'s {BASELINE[1]} phase")
    print("embedded forecast = frozen forecast:", "yes" if not mismatches else "NO: " + ", ".join(mismatches))
    (HERE / "compare.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
