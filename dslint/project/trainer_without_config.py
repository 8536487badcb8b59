"""Whether a script that the `deepspeed` launcher starts builds a Hugging Face Trainer that no DeepSpeed config
reaches (DSL442).

Under the `deepspeed` launcher the Trainer's arguments parse the `--local_rank=N` it appends and read the
environment it sets, so the run starts without a word; but transformers enables DeepSpeed only for a config given
as `TrainingArguments(deepspeed=...)` or `--deepspeed` (read in `TrainingArguments.__post_init__`). Without one the
Trainer trains as plain data-parallel DDP: every rank holds the whole model, its gradients and optimizer states.

The answer is conservative, read from the script's own module: the Trainer is transformers' or TRL's (imported, or
a class of the module deriving from one); its arguments are built in the module by a `*TrainingArguments(...)` call
without `deepspeed=` or a `**` mapping, or parsed from the command line by `HfArgumentParser` (then the launch must
not pass `--deepspeed`); and nothing else in the module may hand DeepSpeed a config (a call into `deepspeed`, a
`deepspeed=` keyword, an attribute named `deepspeed` assigned, `HfDeepSpeedConfig`, accelerate's
`DeepSpeedPlugin`, a parse of arguments from a file or a dict). Any doubt: no answer.
"""

from __future__ import annotations

import ast

from dslint.model.library import is_trainer_class_name, is_training_arguments_name
from dslint.model.summary import ModuleSummary, dotted

_OTHER_SOURCES = ("HfDeepSpeedConfig", "DeepSpeedPlugin", "deepspeed_plugin", "parse_json_file", "parse_yaml_file")


def configless_trainer(summary: ModuleSummary, launch_options: set[str]) -> ast.Call | None:
    """The Trainer construction of a script whose Trainer gets no DeepSpeed config under a launch giving
    `launch_options` (option names, dashes as underscores), or None when one may reach it or it is not known."""
    tree = summary.tree
    trainer_classes = _trainer_classes(summary)
    trainers: list[ast.Call] = []
    parses = arguments_built = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr == "deepspeed":
            return None
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in _OTHER_SOURCES:
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
        elif is_training_arguments_name(name):
            if any(keyword.arg is None for keyword in node.keywords) or any(
                isinstance(a, ast.Starred) for a in node.args
            ):
                return None
            arguments_built += 1
        elif last == "parse_args_into_dataclasses" and not node.args:
            parses += 1
        elif last in ("parse_dict", "parse_args"):
            return None
    if not trainers or arguments_built + parses == 0:
        return None
    if parses and "deepspeed" in launch_options:
        return None
    return trainers[0]


def _trainer_classes(summary: ModuleSummary) -> set[str]:
    """The names this module builds Hugging Face or TRL trainers by: imported ones ending in `Trainer`, and the
    module's own classes deriving from one."""
    names = {
        local for local, full in summary.imports.items() if is_trainer_class_name(full) and local.endswith("Trainer")
    }
    for qualname, bases in summary.classes.items():
        if any(base.rsplit(".", 1)[-1] in names for base in bases):
            names.add(qualname.rsplit(".", 1)[-1])
    return names
