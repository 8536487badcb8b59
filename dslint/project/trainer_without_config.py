"""Whether a script that the `deepspeed` launcher starts builds a Hugging Face Trainer that no DeepSpeed config
reaches (DSL442).

Under the `deepspeed` launcher the Trainer's arguments parse the `--local_rank=N` it appends and read the
environment it sets, so the run starts without a word; but transformers enables DeepSpeed only for a config given
as `TrainingArguments(deepspeed=...)` or `--deepspeed` (read in `TrainingArguments.__post_init__`). Without one the
Trainer trains as plain data-parallel DDP: every rank holds the whole model, its gradients and optimizer states.

The answer is conservative, read from the script's own module: the Trainer is transformers' or TRL's (imported, or
a class of the module deriving from one); its arguments are built in the module by a `*TrainingArguments(...)` call
without `deepspeed=` or a `**` mapping (a project subclass of those or of a TRL config too), or parsed from the
command line by `HfArgumentParser` (then the launch must not pass `--deepspeed`), or an argparse parser whose
`--deepspeed` the script never reads (no `args.deepspeed`, no `vars(args)`); the Trainer class may be a project
one imported from another module; and nothing else in the module may hand DeepSpeed a config (a call into `deepspeed`, a
`deepspeed=` keyword, an attribute named `deepspeed` assigned, `HfDeepSpeedConfig`, accelerate's
`DeepSpeedPlugin`, a parse of arguments from a file or a dict); and the module trains (a `.train(...)` call: a
script that only evaluates or predicts keeps no optimizer states for a config to shard). Any doubt: no answer.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable

from dslint.model.library import TRAINER_PACKAGES, is_trainer_class_name, is_training_arguments_name
from dslint.model.summary import ModuleSummary, SummaryStore, dotted, qualified_dotted
from dslint.project.config_access import config_path
from dslint.project.inputs import is_file, read_input

_OTHER_SOURCES = ("HfDeepSpeedConfig", "DeepSpeedPlugin", "deepspeed_plugin", "parse_json_file", "parse_yaml_file")


def configless_trainer(
    summary: ModuleSummary, launch_options: set[str], store: SummaryStore | None = None, rank_first: bool = False
) -> ast.Call | None:
    """The Trainer construction of a script whose Trainer gets no DeepSpeed config under a launch giving
    `launch_options` (option names, dashes as underscores; "*": more, given at run time or elided), or None when
    one may reach it or it is not known.
    `store`: the project's modules, whose Trainer and TrainingArguments subclasses the script may import.
    `rank_first`: the launcher puts `--local_rank=N` first on the script's command line, so an arguments file
    read only when `sys.argv[1].endswith(".json")` (the Hugging Face examples' idiom) is never read."""
    tree = summary.tree
    unread = _argv_file_arms(tree) if rank_first else set()
    without_deepspeed = _files_without_deepspeed(summary)  # `parse_json_file("hf_config.json")`, no `deepspeed`
    trainer_classes = _trainer_classes(summary, store)
    arguments_classes = _arguments_classes(summary, store)
    # an argparse `--deepspeed` the script never reads (no `args.deepspeed`, no `vars(args)`): dropped on the way
    options_read = any(
        (isinstance(n, ast.Attribute) and n.attr == "deepspeed" and isinstance(n.ctx, ast.Load))
        or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "vars")
        for n in ast.walk(tree)
    )
    trainers: list[ast.Call] = []
    parses = arguments_built = 0
    trains = False  # a `.train(...)` call: what a DeepSpeed config changes (evaluate/predict alone hold no states)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train":
            trains = True
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr == "deepspeed":
            return None
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in _OTHER_SOURCES and id(node) not in unread and id(node) not in without_deepspeed:
                return None
        if not isinstance(node, ast.Call):
            continue
        if any(keyword.arg == "deepspeed" for keyword in node.keywords):
            return None
        qualified = summary.qualified(node.func) or ""
        if qualified.split(".", 1)[0] == "deepspeed":
            return None
        name = dotted(node.func) or ""
        last = node.func.attr if isinstance(node.func, ast.Attribute) else name.rsplit(".", 1)[-1]
        if last in trainer_classes:
            trainers.append(node)
        elif is_training_arguments_name(name) or last in arguments_classes:
            if any(keyword.arg is None for keyword in node.keywords) or any(
                isinstance(a, ast.Starred) for a in node.args
            ):
                return None
            arguments_built += 1
        elif last == "parse_args_into_dataclasses" and not node.args:
            parses += 1
        elif id(node.func) in without_deepspeed:
            arguments_built += 1  # from a file, whatever the command line says
        elif last == "parse_dict" or (last == "parse_args" and options_read):
            return None
    if not trainers or arguments_built + parses == 0 or not trains:
        return None  # no Trainer, no arguments built here, or the script never trains (an evaluation run)
    if parses and ("deepspeed" in launch_options or "*" in launch_options):
        return None  # `--deepspeed` given, or maybe among options given at run time (`"$@"`, a document's `...`)
    return trainers[0]


def _files_without_deepspeed(summary: ModuleSummary) -> set[int]:
    """The `parse_json_file(...)` calls (their `func` nodes) that read the Trainer's arguments from a JSON file the
    project holds by a literal path (beside the script, or in a folder above it), with no `deepspeed` key."""
    found: set[int] = set()
    for node in ast.walk(summary.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "parse_json_file":
            continue
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "json_file"), None)
        if not (isinstance(given, ast.Constant) and isinstance(given.value, str)):
            continue
        path = config_path(summary.path, given.value)
        data = read_input(str(path)) if is_file(str(path)) else None
        try:
            arguments = json.loads(data) if data is not None else None
        except ValueError:
            continue
        if isinstance(arguments, dict) and not any("deepspeed" in str(key) for key in arguments):
            found.add(id(node.func))
    return found


def _trainer_classes(summary: ModuleSummary, store: SummaryStore | None) -> set[str]:
    """The names this module builds Hugging Face or TRL trainers by: imported ones ending in `Trainer`, the
    module's own classes deriving from one, and classes of a project module it imports deriving from one."""
    names = {
        local for local, full in summary.imports.items() if is_trainer_class_name(full) and local.endswith("Trainer")
    }
    return _derived(summary, store, names, lambda full: is_trainer_class_name(full))


def _arguments_classes(summary: ModuleSummary, store: SummaryStore | None) -> set[str]:
    """Classes (of the module, or of a project module it imports) deriving from a `*TrainingArguments` or a TRL
    config (`class CoCoSConfig(OnPolicyConfig)`): building one builds the Trainer's arguments."""
    return _derived(
        summary,
        store,
        set(),
        lambda full: is_training_arguments_name(full) or (full.startswith("trl.") and full.endswith("Config")),
    )


def _derived(
    summary: ModuleSummary, store: SummaryStore | None, names: set[str], library: Callable[[str], bool]
) -> set[str]:
    """`names` with the module's classes deriving from one of them or from a library class `library` accepts,
    and the imported classes of project modules that do (one module away)."""
    for qualname, bases in summary.classes.items():
        if any(base.rsplit(".", 1)[-1] in names or _library_base(summary, base, library) for base in bases):
            names.add(qualname.rsplit(".", 1)[-1])
    for local, full in summary.imports.items() if store is not None else ():
        module_name, _, cls = full.rpartition(".")
        path = store.finder.find(module_name, summary.path) if store is not None and module_name else None
        other = store.get(path) if store is not None and path is not None and path != summary.path else None
        bases = other.classes.get(cls, []) if other is not None else []
        if any(_library_base(other, base, library) for base in bases if other is not None):
            names.add(local)
    return names


def _library_base(summary: ModuleSummary, base: str, library: Callable[[str], bool]) -> bool:
    """A base written in `summary` that names a transformers/TRL class `library` accepts, through the imports."""
    qualified = qualified_dotted(summary.imports, base)
    return qualified is not None and qualified.startswith(TRAINER_PACKAGES) and library(qualified)


def _argv_file_arms(tree: ast.Module) -> set[int]:
    """The nodes in the body of an `if` one of whose conjuncts is `sys.argv[1].endswith(...)`: under a launcher
    that puts `--local_rank=N` first on the command line, that arm never runs."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            if any(_first_argument_suffix(c) for c in conjuncts):
                found.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    return found


def _first_argument_suffix(node: ast.expr) -> bool:
    """`sys.argv[1].endswith(...)`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "endswith"):
        return False
    item = node.func.value
    return (
        isinstance(item, ast.Subscript)
        and dotted(item.value) == "sys.argv"
        and isinstance(item.slice, ast.Constant)
        and item.slice.value == 1
    )
