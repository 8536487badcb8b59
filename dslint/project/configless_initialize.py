"""DSL456's question: a launch that gives its script no DeepSpeed config, where every `deepspeed.initialize` of the
script leaves its config to the command line (no `config=`/`config_params=`: DeepSpeed reads
`args.deepspeed_config`), so `initialize` stops with "DeepSpeed requires --deepspeed_config to specify
configuration file" (`deepspeed/__init__.py`, 0.19.8) on every rank.

Judged only where everything is known: the script's own parser, known whole and strict (as DSL434 and DSL450
read it), gives `deepspeed_config` no default (`deepspeed.add_config_arguments` defaults it to None, or the parser
does not declare it), the script sets no `deepspeed_config` of its own (`args.deepspeed_config = ...`), every
word of the command is known (no `"$@"`), and the `initialize` calls are in the launched script itself, none
under an `if` or a `try` (the command may not take that path).
"""

from __future__ import annotations

import ast
import re

from dslint.diagnostics import Related
from dslint.model.library import INITIALIZE
from dslint.model.summary import ModuleSummary, SummaryStore, nodes_of
from dslint.project.inputs import shown_path
from dslint.project.project_index import LaunchIssue, LaunchSite
from dslint.project.script_parser import argparse_defaults, is_main_test, strict_parser

CONFIG_OPTIONS = frozenset({"deepspeed_config", "deepscale_config"})
# `initialize`'s positional slot of `config` (args, model, optimizer, model_parameters, training_data, lr_scheduler,
# distributed_port, mpu, dist_init_required, collate_fn, config)
_CONFIG_POSITION = 10


def configless_initialize(site: LaunchSite, store: SummaryStore, sources: dict[str, bytes]) -> LaunchIssue | None:
    """The launch's issue when its script's `initialize` calls take their config from a command line that has
    none (see the module's docstring); None otherwise."""
    line, script = site.line, site.script
    if script is None or not script.endswith(".py") or line.module or line.open_words or line.cut_line:
        return None
    given = {option.name for option in line.options} | set(line.lost_options)
    if given & CONFIG_OPTIONS:
        return None  # (a `--deepspeed ds.json` of the script's own goes to `args.deepspeed`, not to initialize)
    data, summary = sources.get(script), store.get(script)
    if not data or summary is None or names_config_option(data):
        return None  # the script names the option's value itself (`args.deepspeed_config = path`)
    calls = initialize_calls(summary)
    if not calls or any(_gives_config(call) for call in calls) or conditional_calls(summary.tree, calls):
        return None
    parser = strict_parser(summary, data)
    if parser is None or argparse_defaults(summary.tree).keys() & CONFIG_OPTIONS:
        return None
    first = calls[0]
    where = Related(shown_path(script), first.lineno, first.col_offset + 1, "deepspeed.initialize gets no config=")
    end = line.column + len(line.tool)
    return LaunchIssue("configless_initialize", line.line, line.column, end, line.script, related=(where,))


# Ways a script may set the option's value itself: an assignment or a keyword (`args.deepspeed_config = path`,
# `parser.set_defaults(deepspeed_config=...)`), the name as a string (`setattr(args, "deepspeed_config", ...)`,
# `vars(args)["deepspeed_config"]`), or a `del`. A read (`open(args.deepspeed_config)`) changes nothing.
_CONFIG_OPTION_WRITTEN = re.compile(
    rb"deepspeed_config\s*(?:=(?!=)|\+=)|[\'\"]deepspeed_config[\'\"]|\bdel\b[^\n]*deepspeed_config"
)


def names_config_option(data: bytes) -> bool:
    """The script may set `deepspeed_config` itself (`args.deepspeed_config = ...`, a keyword, the name as a string,
    a `del`): not the option itself, nor a read of its value."""
    return _CONFIG_OPTION_WRITTEN.search(data.replace(b"--deepspeed_config", b"")) is not None


def initialize_calls(summary: ModuleSummary) -> list[ast.Call]:
    """Every `deepspeed.initialize(...)` call of the module, as its imports name it."""
    return [
        node
        for node in nodes_of(summary.tree, ast.Call)
        if summary.qualified(node.func) in (INITIALIZE.name, *INITIALIZE.aliases)
    ]


def conditional_calls(tree: ast.Module, calls: list[ast.Call]) -> bool:
    """Whether a call sits under an `if` (other than `if __name__ == "__main__":`) or a `try`: the command may
    not take that path (`if args.deepspeed:`), or the script may go on without DeepSpeed."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for call in calls:
        above = parents.get(id(call))
        while above is not None:
            if isinstance(above, (ast.Try, ast.IfExp)) or (isinstance(above, ast.If) and not is_main_test(above.test)):
                return True
            above = parents.get(id(above))
    return False


def _gives_config(call: ast.Call) -> bool:
    """`config=`/`config_params=`, `**kwargs` (anything), or a positional argument in `config`'s slot."""
    if any(k.arg is None or k.arg in INITIALIZE.config for k in call.keywords):
        return True
    return len(call.args) > _CONFIG_POSITION or any(isinstance(a, ast.Starred) for a in call.args)
