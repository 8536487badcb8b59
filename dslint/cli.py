"""The `dslint` command: a click group; each subcommand lives in `dslint.commands`."""

from __future__ import annotations

import io
import sys

import click

from dslint import __version__
from dslint.commands.check import check, clean
from dslint.commands.fix import fix
from dslint.commands.graph import graph
from dslint.commands.rules import explain, rules
from dslint.commands.settings import settings_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dslint")
def main() -> None:
    """Find, before a GPU hour is spent, the DeepSpeed mistakes that waste memory or silently break training."""
    # A file name that is not valid UTF-8 (held as surrogates) or a lone surrogate in a config key is printed
    # escaped (`\udcff`), never a UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


main.add_command(check)
main.add_command(clean)
main.add_command(fix)
main.add_command(rules)
main.add_command(explain)
main.add_command(settings_command)
main.add_command(graph)


@main.command()
def lsp() -> None:
    """Run the language server over stdio (needs pygls: `pip install 'deepspeed-lint[lsp]'`)."""
    try:
        from dslint.lsp import main as serve
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise click.ClickException(
            f"the language server needs pygls 2 ({error}); pip install 'deepspeed-lint[lsp]'"
        ) from error
    serve()
