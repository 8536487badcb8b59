"""Whether a launched script may read its command line (DSL424's question, `launch_issues.unread_config`): it, or a
project module it imports at any depth, names an argument parser or `sys.argv`, or hands the run to a function of
an installed package that may parse it (an entry point).

Conservative on purpose: a module that does not parse, or an entry point of a package outside the project, counts
as reading it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from dslint.model.library import NO_COMMAND_LINE_PACKAGES
from dslint.model.summary import ModuleSummary, SummaryStore, dotted

# Words whose presence in a module means it may read the command line (any argument parser, or sys.argv).
COMMAND_LINE_TOKENS = (
    b"argv",
    b"argparse",
    b"ArgumentParser(",  # built (`HfArgumentParser((...))`), not only imported
    b"parse_args",
    b"parse_known_args",
    b"fire",
    b"click",
    b"typer",
    b"hydra",
    b"tyro",
    b"absl",
    b"docopt",
    b"getopt",
    b"jsonargparse",
    b"simple_parsing",
    b"from_cli",
    b"Parser(",  # a parser of the project's own, built (an import alone reads nothing)
)


def reads_command_line(script: str, store: SummaryStore, sources: dict[str, bytes]) -> bool:
    """Whether `script`, or a project module it imports (at any depth), may read the command line."""
    for path, data in _import_closure(script, store, sources):
        if data is None or any(token in data for token in COMMAND_LINE_TOKENS):
            return True
        summary = store.get(path)
        if summary is None:
            return True  # a module that does not parse: nothing is known
        if _calls_outside_entry(summary, store, path):
            return True
    return False


def _import_closure(script: str, store: SummaryStore, sources: dict[str, bytes]) -> Iterator[tuple[str, bytes | None]]:
    """`script` and the project modules it imports (relative, star), at any depth, each once, with its text (None:
    not read). A module's imports are read when the caller goes on past it (it may stop there)."""
    seen: set[str] = set()
    todo = [script]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        yield path, sources.get(path)
        summary = store.get(path)
        if summary is None:
            continue
        for imported in set(summary.imports.values()) | set(summary.stars):
            found = _project_module(store, imported, path)
            if found is not None:
                todo.append(found)


def _project_module(store: SummaryStore, dotted_name: str, near: str) -> str | None:
    """The project file of an imported name: the module itself, or the module holding the imported name."""
    found = store.finder.find(dotted_name, near)
    if found is None and "." in dotted_name:
        found = store.finder.find(dotted_name.rsplit(".", 1)[0], near)
    return found


def _calls_outside_entry(summary: ModuleSummary, store: SummaryStore, path: str) -> bool:
    """A call of a function imported from a module outside the project that may be an entry point reading the
    command line itself: one without arguments anywhere (`main()`, `cli.run()`), or one whose result the module's
    own code drops (`train(attn_implementation="flash_attention_2")` at module level or under `if __name__ ==
    "__main__":`, the script handing its run to an installed package); not one of a package that never reads it
    (`torch.no_grad()`: `library.NO_COMMAND_LINE_PACKAGES`)."""
    dropped = {id(statement.value) for statement in _module_code(summary.tree.body) if isinstance(statement, ast.Expr)}
    for node in ast.walk(summary.tree):
        if not isinstance(node, ast.Call) or ((node.args or node.keywords) and id(node) not in dropped):
            continue
        name = dotted(node.func)
        if name is None:
            continue
        head = name.split(".", 1)[0]
        imported = summary.imports.get(head)
        if imported is None:
            continue
        target = imported + name[len(head) :]
        if target.split(".", 1)[0] in NO_COMMAND_LINE_PACKAGES or _project_module(store, target, path) is not None:
            continue
        if target.rsplit(".", 1)[-1][:1].isupper():
            continue  # a class built without arguments (`Config()`): not an entry point
        return True
    return False


def _module_code(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements a module runs on import or as a script: its top level, into `if`/`try`/`with` blocks (the
    `if __name__ == "__main__":` block among them), not into definitions."""
    found: list[ast.stmt] = []
    for statement in body:
        found.append(statement)
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            for inner in (statement.body, getattr(statement, "orelse", []), getattr(statement, "finalbody", [])):
                found.extend(_module_code(inner))
    return found


# Ways the parsed namespace is read whole (every option's value with it): `vars(args)`, `args.__dict__`, a
# `getattr(args, name)`, or `deepspeed.initialize(args=args)`, which reads `args.deepspeed_config` itself.
_WHOLE_NAMESPACE = (b"vars(", b"__dict__", b"getattr(", b"initialize(", b"add_config_arguments")


def option_never_used(script: str, option: str, store: SummaryStore, sources: dict[str, bytes]) -> bool:
    """Whether the launch's `--option` is declared by the project's own parser (`add_argument("--option", ...)` in
    `script` or a project module it imports, at any depth) and its value is read nowhere there: no `.option`
    attribute read, and the namespace never handed on whole (`_WHOLE_NAMESPACE`) by the script or the module
    declaring the option. The option then configures nothing (`--deepspeed_config ds.json` accepted by a TRL
    script that never hands it to its Trainer)."""
    dest = re.escape(option.lstrip("-").replace("-", "_").encode())
    declared = re.compile(
        rb"add_argument\(\s*(?:['\"]-\w+['\"]\s*,\s*)?['\"]--" + re.escape(option.lstrip("-").encode()) + rb"['\"]"
    )
    read = re.compile(rb"\.\s*" + dest + rb"\b|['\"]" + dest + rb"['\"]\s*\]")
    found = False
    for path, data in _import_closure(script, store, sources):
        if data is None or store.get(path) is None:
            return False  # a module not read: nothing is known
        declares = declared.search(data) is not None
        if read.search(data) or ((path == script or declares) and any(token in data for token in _WHOLE_NAMESPACE)):
            return False  # read, or the namespace handed on whole where it is made or parsed
        found = found or declares
    return found
