"""Bar charts of memory per phase, GPU and host, as SVG written by hand (no plotting library needed); PNG through
matplotlib only when it is installed.

A chart is a list of panels (one per launch or per script); each panel has phases and series (`forecast`, or
`original` / `fixed` / `forecast`), each series a (GPU bytes, host bytes) pair per phase, None where unknown.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

GIB = float(1 << 30)
COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948")
PANEL_W, PANEL_H, MARGIN = 440, 230, 50


@dataclass(frozen=True)
class Panel:
    title: str
    phases: tuple[str, ...]
    series: dict[str, dict[str, tuple[int | None, int | None]]]  # series -> phase -> (gpu, host)


def _chart(panel: Panel, which: int, x0: float, y0: float) -> list[str]:
    """One axis (which 0: GPU, 1: host) at (x0, y0)."""
    out: list[str] = []
    values = [v[which] for s in panel.series.values() for v in s.values() if v[which] is not None]
    top = max([float(v) for v in values if v is not None] + [1.0]) / GIB
    scale = _nice(top)
    height, width = PANEL_H - 70, PANEL_W - MARGIN - 10
    left, bottom = x0 + MARGIN, y0 + 30 + height
    out.append(f'<text x="{x0 + PANEL_W / 2:.0f}" y="{y0 + 18:.0f}" text-anchor="middle" font-weight="bold">'
               f'{"GPU per rank" if which == 0 else "host per rank"} (GiB)</text>')  # fmt: skip
    for tick in range(5):
        mark = scale * tick / 4
        y = bottom - height * tick / 4
        out.append(f'<line x1="{left:.0f}" y1="{y:.1f}" x2="{left + width:.0f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 4:.0f}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{mark:g}</text>')
    names = list(panel.series)
    group = width / max(1, len(panel.phases))
    bar = group * 0.8 / max(1, len(names))
    for p_index, phase in enumerate(panel.phases):
        gx = left + group * p_index + group * 0.1
        out.append(f'<text x="{gx + group * 0.4:.1f}" y="{bottom + 14:.0f}" text-anchor="middle" font-size="11">'
                   f"{escape(phase)}</text>")  # fmt: skip
        for s_index, name in enumerate(names):
            value = panel.series[name].get(phase, (None, None))[which]
            x = gx + bar * s_index
            if value is None:
                out.append(f'<text x="{x + bar / 2:.1f}" y="{bottom - 3:.0f}" text-anchor="middle" font-size="9">'
                           "n/a</text>")  # fmt: skip
                continue
            h = height * (value / GIB) / scale if scale else 0
            colour = COLOURS[s_index % len(COLOURS)]
            tip = f"{escape(name)} {escape(phase)}: {value / GIB:.2f} GiB"
            out.append(f'<rect x="{x:.1f}" y="{bottom - h:.1f}" width="{bar * 0.92:.1f}" height="{h:.1f}" '
                       f'fill="{colour}"><title>{tip}</title></rect>')  # fmt: skip
            out.append(f'<text x="{x + bar * 0.46:.1f}" y="{bottom - h - 2:.1f}" text-anchor="middle" '
                       f'font-size="8">{value / GIB:.2f}</text>')  # fmt: skip
    return out


def _nice(top: float) -> float:
    for step in (0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000):
        if top <= step * 4:
            return step * 4
    return top


def svg(panels: Sequence[Panel]) -> str:
    width = 2 * PANEL_W + 20
    height = sum(PANEL_H + 40 for _ in panels) + 10
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    y = 10.0
    for panel in panels:
        out.append(f'<text x="10" y="{y + 14:.0f}" font-weight="bold">{escape(panel.title)}</text>')
        legend_x = 10.0
        for index, name in enumerate(panel.series):
            colour = COLOURS[index % len(COLOURS)]
            out.append(f'<rect x="{legend_x:.0f}" y="{y + 22:.0f}" width="10" height="10" fill="{colour}"/>')
            out.append(f'<text x="{legend_x + 14:.0f}" y="{y + 31:.0f}" font-size="11">{escape(name)}</text>')
            legend_x += 20 + 7 * len(name)
        out.extend(_chart(panel, 0, 10, y + 34))
        out.extend(_chart(panel, 1, 10 + PANEL_W, y + 34))
        y += PANEL_H + 40
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write(path: str | Path, panels: Sequence[Panel]) -> None:
    """SVG by hand; PNG with matplotlib (ValueError when it is not installed, or for another suffix)."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".svg":
        target.write_text(svg(panels), encoding="utf-8")
        return
    if suffix != ".png":
        raise ValueError(f"--plot writes .svg or .png, not {suffix or 'a file without a suffix'}")
    if importlib.util.find_spec("matplotlib") is None:
        raise ValueError("a PNG needs matplotlib, which is not installed: write an .svg instead")
    _png(target, panels)


def _png(target: Path, panels: Sequence[Panel]) -> None:  # pragma: no cover - matplotlib absent in CI
    matplotlib = importlib.import_module("matplotlib")
    matplotlib.use("Agg")
    plt = importlib.import_module("matplotlib.pyplot")

    figure, axes = plt.subplots(len(panels), 2, figsize=(11, 3.2 * len(panels)), squeeze=False)
    for row, panel in enumerate(panels):
        for which in (0, 1):
            axis = axes[row][which]
            names = list(panel.series)
            width = 0.8 / max(1, len(names))
            for index, name in enumerate(names):
                values = [panel.series[name].get(phase, (None, None))[which] for phase in panel.phases]
                xs = [p + index * width for p in range(len(panel.phases))]
                axis.bar(xs, [(v or 0) / GIB for v in values], width, label=name)
            axis.set_xticks([p + 0.4 - width / 2 for p in range(len(panel.phases))], panel.phases)
            axis.set_ylabel("GiB")
            axis.set_title(f"{panel.title}: {'GPU' if which == 0 else 'host'} per rank", fontsize=9)
            axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(target)


def forecast_panels(launches: Sequence[dict[str, object]]) -> list[Panel]:
    """`dslint memory`'s launches as panels: the forecast per phase."""
    panels: list[Panel] = []
    for entry in launches:
        phases = entry.get("phases")
        if not isinstance(phases, dict):
            continue
        where = entry.get("launcher") or entry.get("script")
        title = f"{where}: ZeRO {entry.get('zero_stage')}, {entry.get('world_size')} ranks"
        series = {"forecast": {name: (value["gpu_bytes"], value["host_bytes"]) for name, value in phases.items()}}
        panels.append(Panel(title, tuple(phases), series))
    return panels
