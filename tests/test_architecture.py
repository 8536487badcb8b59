"""The import flow of dslint/ and runtime_check/ runs one way: no import circle, and each module imports only
from its own layer or a lower one, apart from the named exceptions below (docs/architecture.md says why).

The graph is read with `ast` (nothing is imported): relative imports are resolved, `from pkg import name` counts as
an import of `pkg.name` when that is a module, and imports inside functions or under `TYPE_CHECKING` count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("dslint", "runtime_check")

# Low to high. `name` is that module only; `name.*` is the package and every module under it. A module takes the
# most specific pattern that matches it. Keep in step with the table in docs/architecture.md.
LAYERS: list[tuple[str, list[str]]] = [
    (
        "diagnostics",
        [
            "dslint",
            "dslint.diagnostics",
            "dslint.selection",
            "dslint.gitignore",
            "dslint.limits",
            "dslint.collector",
            "dslint.beside",
        ],
    ),
    ("model", ["dslint.model.*"]),
    ("facts", ["dslint.config.*", "dslint.script.*"]),
    ("project", ["dslint.project.*"]),
    ("rule framework", ["dslint.framework.*"]),
    ("rules", ["dslint.rules.*"]),
    (
        "rule set",
        [
            "dslint.framework.registry",
            "dslint.framework.rule_table",
            "dslint.framework.rule_pages",
            "dslint.settings_options",
            "dslint.settings",
        ],
    ),
    ("lint", ["dslint.lint.*"]),
    ("fix", ["dslint.fix.*"]),
    ("report", ["dslint.report.*"]),
    ("memory", ["dslint.memory.*"]),
    (
        "adapters",
        [
            "dslint.commands.*",
            "dslint.cli",
            "dslint.__main__",
            "dslint.flake8",
            "dslint.lsp",
            "dslint.lsp_positions",
            "dslint.lsp_configs",
            "dslint.lsp_actions",
            "dslint.lsp_project",
            "dslint.lsp_io",
        ],
    ),
    ("runtime_check", ["runtime_check.*"]),
]

# (importer, imported): reason. At most three; each is listed in docs/architecture.md.
UPWARD_EXCEPTIONS: dict[tuple[str, str], str] = {}


def module_files() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package's __init__)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            modules[".".join(parts)] = (path, is_package)
    return modules


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.add(submodule if submodule in modules else source)
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def layer_of(module: str) -> int:
    best: tuple[int, int] | None = None  # (specificity, layer)
    for index, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if pattern.endswith(".*"):
                prefix = pattern[:-2]
                matches = module == prefix or module.startswith(prefix + ".")
                specificity = 2 * len(prefix)
            else:
                matches = module == pattern
                specificity = 2 * len(pattern) + 1
            if matches and (best is None or specificity > best[0]):
                best = (specificity, index)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)")
    return best[1]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (importer, imported)
        for importer, targets in graph.items()
        for imported in targets
        if layer_of(imported) > layer_of(importer)
    )


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert len(graph) > 100
    assert "dslint.diagnostics" in graph["dslint.report.json"]


def test_no_import_circle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_every_module_has_a_layer() -> None:
    for module in import_graph():
        layer_of(module)


def test_imports_flow_down_the_layers() -> None:
    assert len(UPWARD_EXCEPTIONS) <= 3
    upward = upward_imports(import_graph())
    unexpected = [
        f"{importer} ({LAYERS[layer_of(importer)][0]}) imports {imported} ({LAYERS[layer_of(imported)][0]})"
        for importer, imported in upward
        if (importer, imported) not in UPWARD_EXCEPTIONS
    ]
    assert not unexpected, "imports from a lower layer to a higher one:\n" + "\n".join(unexpected)
    stale = [pair for pair in UPWARD_EXCEPTIONS if pair not in upward]
    assert not stale, f"exceptions that no longer happen (remove them here and in docs/architecture.md): {stale}"


def test_no_driver_names_a_particular_rule() -> None:
    """Drivers reach rules through the registry; a rule module is imported only by the registry (dynamically)."""
    graph = import_graph()
    offenders = [
        f"{importer} imports {imported}"
        for importer, targets in graph.items()
        if not importer.startswith("dslint.rules.")
        for imported in targets
        if imported.startswith("dslint.rules.")
    ]
    assert not offenders, "\n".join(offenders)


def test_the_checker_sees_a_circle_and_an_upward_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert upward_imports({"dslint.diagnostics": {"dslint.lsp"}, "dslint.lsp": set()}) == [
        ("dslint.diagnostics", "dslint.lsp")
    ]


MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    """One concern per module: a module that grows past this is split along a seam (docs/architecture.md)."""
    long = {
        name: count
        for name, (path, _) in module_files().items()
        if name.startswith("dslint")
        and (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
