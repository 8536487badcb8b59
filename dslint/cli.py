"""The `dslint` command: a click group; each subcommand lives in `dslint.commands`."""

from __future__ import annotations

import importlib
import io
import sys

import click

from dslint import __version__
from dslint.commands.check import check, clean

# Subcommands imported only when run (`fix` brings libcst, `rules` every rule): `dslint check` starts fast.
LAZY_COMMANDS = {
    "fix": ("dslint.commands.fix", "fix"),
    "rules": ("dslint.commands.rules", "rules"),
    "explain": ("dslint.commands.rules", "explain"),
    "settings": ("dslint.commands.settings", "settings_command"),
    "graph": ("dslint.commands.graph", "graph"),
    "memory": ("dslint.commands.memory", "memory"),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            module, attribute = LAZY_COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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


@main.command()
def lsp() -> None:
    """Run the language server over stdio (alias: `dslint server`; needs pygls: `pip install 'deepspeed-lint[lsp]'`)."""
    try:
        from dslint.lsp import main as serve
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise click.ClickException(
            f"the language server needs pygls 2 ({error}); pip install 'deepspeed-lint[lsp]'"
        ) from error
    serve()


main.add_command(lsp, "server")  # `ruff server`'s name for the same thing
