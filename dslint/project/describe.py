"""What dslint believes about a project, as plain data: launchers -> scripts -> configs -> ZeRO stage and
precision; where engines are created and where they go. `dslint graph` prints it (text or JSON), so a user
can see why a rule fired or stayed silent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dslint.config import facts as config_facts
from dslint.config.facts import is_auto
from dslint.config.tree import Object, node_at
from dslint.project.config_access import load_config_tree
from dslint.project.project_index import ProjectIndex


def _shown(path: str | None) -> str | None:
    if path is None:
        return None
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def config_summary(path: str, named_by: str | None = None) -> dict[str, Any]:
    """The ZeRO stage and precision a config file sets (None where not literal, unreadable or not read:
    `config_access`, for the file `named_by` that names it)."""
    tree = load_config_tree(Path(path), named_by)
    if not isinstance(tree, Object):
        return {"path": _shown(path), "zero_stage": None, "precision": None, "readable": False}
    bf16_name = config_facts.bf16_section(tree)
    if any(is_auto(node_at(tree, section, "enabled")) for section in ("fp16", bf16_name)):
        precision: str | None = "auto"  # filled in by the HF Trainer / accelerate
    else:
        fp16 = config_facts.enabled(tree, "fp16")
        bf16 = config_facts.enabled(tree, bf16_name)
        precision = "fp16" if fp16 else "bf16" if bf16 else "fp32" if fp16 is False and bf16 is False else None
    return {"path": _shown(path), "zero_stage": config_facts.zero_stage(tree), "precision": precision, "readable": True}


def _precision(summary: dict[str, Any] | None, mixed_precision: str | None) -> str | None:
    """A config's precision; accelerate's `mixed_precision` where the config leaves it to accelerate."""
    precision = summary["precision"] if summary is not None else None
    if precision in (None, "auto") and mixed_precision not in (None, "no"):
        return mixed_precision
    return precision if isinstance(precision, str) else None


def describe(index: ProjectIndex) -> dict[str, Any]:
    launches: list[dict[str, Any]] = []
    configs: dict[str, dict[str, Any]] = {}
    for launch in index.launches:
        line = launch.line
        config = launch.config
        summary = config_summary(config.config_path, line.launcher) if config.config_path is not None else None
        if summary is not None and config.config_path is not None:
            configs.setdefault(config.config_path, summary)
        stage = summary["zero_stage"] if summary is not None else config.inline_stage
        launches.append(
            {
                "launcher": _shown(os.path.abspath(line.launcher)),
                "line": line.line,
                "target": line.target,
                "tool": line.tool,
                "script": _shown(launch.script) if launch.script is not None else line.script,
                "script_found": launch.script is not None,
                "accelerate_config": _shown(launch.accelerate.path) if launch.accelerate is not None else None,
                "config_option": config.option,
                "config": _shown(config.config_path),
                "zero_stage": stage,
                "precision": _precision(summary, config.mixed_precision),
                "options": dict(config.options),
            }
        )
    for path, summary in configs.items():
        summary["read_by"] = index.config_reader(path)
    engines: list[dict[str, Any]] = []
    for path, site_line, function in index.initialize_sites:
        engines.append({"created": f"{_shown(path)}:{site_line}", "in": function or "<module>"})
    flows: list[dict[str, Any]] = []
    for path, facts in sorted(index.files.items()):
        for function, parameters in sorted(facts.parameters.items()):
            for parameter, fact in sorted(parameters.items()):
                flows.append(
                    {
                        "receives": fact.role,
                        "function": f"{_shown(path)}:{function}",
                        "parameter": parameter,
                        "passed_at": f"{fact.origin.path}:{fact.origin.line}",
                        "zero_stage": fact.config.zero_stage if fact.config is not None else None,
                    }
                )
        helpers = {returned.callee: returned for _, returned in sorted(facts.returns.items())}
        for callee, returned in sorted(helpers.items()):
            flows.append(
                {
                    "returns": list(returned.roles),
                    "helper": callee,
                    "called_in": _shown(path),
                    "initialize": f"{returned.origin.path}:{returned.origin.line}",
                    "zero_stage": returned.config.zero_stage if returned.config is not None else None,
                }
            )
        for builder, origin in sorted(facts.model_builders.items()):
            flows.append(
                {
                    "model_from": f"{_shown(path)}:{builder}",
                    "initialize": f"{origin.path}:{origin.line}",
                }
            )
    return {"launches": launches, "configs": list(configs.values()), "engines": engines, "engine_flow": flows}


def unresolved(launch: dict[str, Any]) -> bool:
    """A launch command that says nothing about the project's training: its script is not in the tree (a path
    outside it, one built at run time) or it runs a `setup.py`."""
    return not launch["script_found"] or Path(str(launch["script"])).name == "setup.py"


def render_text(data: dict[str, Any], verbose: bool = False) -> str:
    """The model as text; launch commands that resolve to nothing (`unresolved`) only with `verbose`."""
    out: list[str] = []
    out.append("Launchers -> scripts -> configs:")
    if not data["launches"]:
        out.append("  (no launcher found: .sh scripts, Makefiles)")
    shown = [launch for launch in data["launches"] if verbose or not unresolved(launch)]
    for launch in shown:
        where = f"{launch['launcher']}:{launch['line']}" + (f" [{launch['target']}]" if launch["target"] else "")
        via = f" (accelerate config {launch['accelerate_config']})" if launch["accelerate_config"] else ""
        script = launch["script"] + ("" if launch["script_found"] else " (not found)")
        out.append(f"  {where}: {launch['tool']}{via} -> {script}")
        if launch["config"] is not None or launch["config_option"] is not None:
            name = launch["config"] or "(inline in the accelerate config)"
            stage = "unknown" if launch["zero_stage"] is None else str(launch["zero_stage"])
            out.append(
                f"      config {name} via {launch['config_option']}: ZeRO stage {stage}, "
                f"precision {launch['precision'] or 'unknown'}"
            )
        elif "zero_stage" in launch["options"]:
            out.append(f"      --zero_stage {launch['options']['zero_stage']}")
    if len(shown) < len(data["launches"]):
        hidden = len(data["launches"]) - len(shown)
        noun = "command" if hidden == 1 else "commands"
        out.append(f"  ({hidden} more launch {noun} whose script is not in the tree, or is a setup.py: -v shows them)")
    out.append("Configs:")
    if not data["configs"]:
        out.append("  (none named by a launcher)")
    for config in data["configs"]:
        stage = "unknown" if config["zero_stage"] is None else str(config["zero_stage"])
        reader = {
            "trainer": "the HF Trainer / accelerate",
            "initialize": "deepspeed.initialize",
            "lightning": "Lightning's DeepSpeedStrategy",
        }.get(config.get("read_by") or "", "unknown")
        out.append(
            f"  {config['path']}: ZeRO stage {stage}, precision {config['precision'] or 'unknown'}; read by {reader}"
        )
    out.append("Engines:")
    if not data["engines"]:
        out.append("  (no deepspeed.initialize found)")
    for engine in data["engines"]:
        out.append(f"  created at {engine['created']} in {engine['in']}")
    for flow in data["engine_flow"]:
        if "model_from" in flow:
            out.append(f"  {flow['model_from']}() returns the model initialize receives at {flow['initialize']}")
        elif "receives" in flow:
            out.append(f"  {flow['receives']} passed at {flow['passed_at']} -> {flow['function']}({flow['parameter']})")
        else:
            roles = ", ".join(r or "_" for r in flow["returns"])
            out.append(
                f"  {flow['helper']}() returns ({roles}) to {flow['called_in']} (initialize at {flow['initialize']})"
            )
    return "\n".join(out) + "\n"
