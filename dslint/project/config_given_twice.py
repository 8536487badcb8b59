"""DSL468's question: a launch that gives its script `--deepspeed_config`, where every `deepspeed.initialize` of the
script passes both the parsed namespace (`args=args`, which then carries that option's value) and a config of its
own (`config=`/`config_params=`), so `initialize` stops with "Not sure how to proceed, we were given deepspeed
configs in the deepspeed arguments and deepspeed.initialize() function call" (`deepspeed/__init__.py`, 0.19.8) on
every rank, before the file the option names is ever opened.

Judged only where everything is known, as DSL456's twin (`configless_initialize`): the script's own parser, known
whole and strict, declares the option (`deepspeed.add_config_arguments`, or `--deepspeed_config` itself), the
script sets no `deepspeed_config` of its own (`args.deepspeed_config = None`), the launch gives the option a
literal value, and the `initialize` calls are in the launched script, none under an `if` or a `try`, each given
`args=` a name and a config that is not `None`.
"""

from __future__ import annotations

import ast

from dslint.diagnostics import Related
from dslint.model.library import INITIALIZE
from dslint.model.summary import SummaryStore
from dslint.project.configless_initialize import (
    CONFIG_OPTIONS,
    conditional_calls,
    initialize_calls,
    names_config_option,
)
from dslint.project.inputs import shown_path
from dslint.project.project_index import LaunchIssue, LaunchSite
from dslint.project.script_parser import strict_parser


def config_given_twice(site: LaunchSite, store: SummaryStore, sources: dict[str, bytes]) -> LaunchIssue | None:
    """The launch's issue when its script's `initialize` calls get a config both from the command line's
    `--deepspeed_config` and in code (see the module's docstring); None otherwise."""
    line, script = site.line, site.script
    if script is None or not script.endswith(".py") or line.module or line.cut_line:
        return None
    option = next((o for o in line.options if o.name in CONFIG_OPTIONS and o.value), None)
    if option is None:
        return None
    data, summary = sources.get(script), store.get(script)
    if not data or summary is None or names_config_option(data):
        return None  # the script handles the option's value itself (`args.deepspeed_config = None`)
    if b"add_config_arguments" not in data and b"--deepspeed_config" not in data:
        return None  # the parser does not declare it: argparse refuses the option (DSL450's)
    calls = initialize_calls(summary)
    if not calls or not all(_both(call) for call in calls) or conditional_calls(summary.tree, calls):
        return None
    if strict_parser(summary, data) is None:
        return None
    first = calls[0]
    where = Related(
        shown_path(script), first.lineno, first.col_offset + 1, "deepspeed.initialize gets args= and config="
    )
    end = option.column + len(option.name) + 2
    return LaunchIssue("config_given_twice", option.line, option.column, end, line.script, related=(where,))


def _both(call: ast.Call) -> bool:
    """`args=` a name, and a config keyword that is not None (no `**kwargs`, no positional arguments to read)."""
    if call.args or any(k.arg is None for k in call.keywords):
        return False
    given = {k.arg: k.value for k in call.keywords if k.arg is not None}
    config = next((given[name] for name in INITIALIZE.config if name in given), None)
    arguments = given.get("args")
    return (
        isinstance(arguments, ast.Name)
        and config is not None
        and not (isinstance(config, ast.Constant) and config.value is None)
    )
