"""The `dslint` command: a click group; each subcommand lives in `dslint.commands`."""

from __future__ import annotations

import contextlib
import errno
import importlib
import io
import os
import sys
from typing import Any, NoReturn

import click

from dslint import __version__
from dslint.commands.check import check, clean
from dslint.diagnostics import printable

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
    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Click's main; a write to stdout that fails (a full disk: `> /dev/full`) is one error line and exit 2
        (`_output_failed`), where click would show a traceback."""
        try:
            return super().main(*args, **kwargs)
        except OSError as error:
            if error.errno == errno.EPIPE:
                raise
            _output_failed(error)

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
    click.get_current_context().call_on_close(_flush_stdout)


def _flush_stdout() -> None:
    """The report must reach stdout or the run fails: a write error (a full disk, `> /dev/full`) is one error
    line and exit 2, never a traceback at exit nor a run that looks clean."""
    stream = sys.stdout
    if stream is None:
        return
    try:
        stream.flush()
    except OSError as error:
        if error.errno == errno.EPIPE:  # a reader that went away (`| head`): click's own handling
            raise
        _output_failed(error)


def _output_failed(error: OSError) -> NoReturn:
    """One line for an error no command caught (a failed write to stdout), then exit 2; what stays buffered for
    stdout goes nowhere at exit instead of raising again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if error.errno in (errno.ENOSPC, errno.EIO, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)):
        message = f"cannot write the output: {error.strerror or error}"
    else:
        message = f"{error.strerror or error}" + (f": {error.filename}" if error.filename else "")
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"dslint: error: {printable(message)}\n")
        sys.stderr.flush()
    sys.exit(2)


main.add_command(check)
main.add_command(clean)


def run() -> NoReturn:
    """The console entry (`dslint`, `python -m dslint`): click's main, then a fast exit. Once the report is out
    and stdout and stderr are flushed, the process ends with `os._exit` and the same status, skipping the
    interpreter's teardown (freeing every syntax tree of a large project costs seconds). Every file dslint
    writes (the report, the cache, fixed sources) is closed before its command returns. A status that is not
    an int (a message), or a flush that fails, takes Python's ordinary exit."""
    try:
        main()
    except SystemExit as done:
        code = done.code
        if code is not None and not isinstance(code, int):
            raise
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            raise done from None
        os._exit(code or 0)
    raise SystemExit(0)  # click's standalone main always exits; kept for a main that returns


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
