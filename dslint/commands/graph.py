"""`dslint graph`: what dslint believes about a project (launchers, configs, engines), as text, JSON, or a
drawing (Graphviz `dot`, `mermaid`) of launchers -> scripts -> configs."""

from __future__ import annotations

import json
from typing import Any

import click

from dslint.diagnostics import printable
from dslint.lint.batch import index_project
from dslint.lint.files import discover
from dslint.project.describe import describe, render_text, unresolved


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--output-format",
    "--format",
    "output",
    type=click.Choice(["text", "json", "dot", "mermaid"]),
    default="text",
    help="Output format (`--format` is an alias): text, json, or a drawing (Graphviz dot, mermaid).",
)
@click.option("-v", "--verbose", is_flag=True, help="Also show launch commands whose script is not in the tree.")
def graph(paths: tuple[str, ...], output: str, verbose: bool) -> None:
    """Show the project model: launchers -> scripts -> configs -> ZeRO stage and precision; where engines are
    created and where they go (default: the current directory)."""
    roots = paths or (".",)
    found = discover(roots)
    for error in found.errors:
        click.echo(f"dslint: error: {printable(error)}", err=True)
    data = describe(index_project(found.files, roots))
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    elif output in ("dot", "mermaid"):
        click.echo(drawing(data, output, verbose), nl=False)
    else:
        click.echo(render_text(data, verbose), nl=False)
    if found.errors:
        raise SystemExit(2)


def _edges(data: dict[str, Any], verbose: bool) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """The nodes (id -> label) and edges (from, to, label) of launchers -> scripts -> configs."""
    nodes: dict[str, str] = {}
    edges: dict[tuple[str, str, str], None] = {}  # each link once, in order
    ids: dict[tuple[str, str], str] = {}

    def node(kind: str, name: str, label: str) -> str:
        if (kind, name) not in ids:
            ids[(kind, name)] = f"{kind}{len(ids)}"
            nodes[ids[(kind, name)]] = label
        return ids[(kind, name)]

    stages = {c["path"]: c for c in data["configs"]}
    for launch in data["launches"]:
        if not verbose and unresolved(launch):
            continue
        where = f"{launch['launcher']}:{launch['line']}"
        launcher = node("l", where, where + (f" [{launch['target']}]" if launch["target"] else ""))
        script = node("s", str(launch["script"]), str(launch["script"]))
        edges[(launcher, script, str(launch["tool"]))] = None
        if launch["config"] is not None:
            config = stages.get(launch["config"], {})
            stage = config.get("zero_stage", launch["zero_stage"])
            label = f"{launch['config']}\nZeRO {'?' if stage is None else stage}, {launch['precision'] or '?'}"
            edges[(script, node("c", launch["config"], label), str(launch["config_option"] or "config"))] = None
    return nodes, list(edges)


def drawing(data: dict[str, Any], kind: str, verbose: bool = False) -> str:
    nodes, edges = _edges(data, verbose)
    if kind == "dot":
        out = ["digraph dslint {", "  rankdir=LR;"]
        out += [f"  {key} [label={_dot(label)}];" for key, label in nodes.items()]
        out += [f"  {a} -> {b} [label={_dot(label)}];" for a, b, label in edges]
        return "\n".join([*out, "}"]) + "\n"
    out = ["flowchart LR"]
    out += [f'  {key}["{_mermaid(label)}"]' for key, label in nodes.items()]
    out += [f'  {a} -- "{_mermaid(label)}" --> {b}' for a, b, label in edges]
    return "\n".join(out) + "\n"


def _dot(text: str) -> str:
    """A Graphviz quoted string: `"` and `\\` escaped, a line break as `\\n` (centred)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _mermaid(text: str) -> str:
    """A mermaid label: quotes and markup as entities, a line break as <br>."""
    escaped = text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
    return escaped.replace("\n", "<br>")
