"""`--output-format` on every subcommand that prints a report (`--format` stays as its alias), and the
language server's `server` alias, as a ruff user types them."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from dslint.cli import main

COMMANDS = [["rules"], ["explain", "DSL101"], ["settings", "."], ["graph", "."]]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_output_format_and_its_format_alias(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("import deepspeed\nengine, *_ = deepspeed.initialize(model=m)\n", "utf-8")
    runner = CliRunner()
    long = runner.invoke(main, [*command, "--output-format", "json"])
    short = runner.invoke(main, [*command, "--format", "json"])
    assert long.exit_code == short.exit_code == 0, long.output
    assert json.loads(long.stdout) == json.loads(short.stdout)
    assert runner.invoke(main, [*command, "--output-format", "text"]).stdout != long.stdout


def test_server_is_the_language_servers_alias() -> None:
    context = click.Context(main)
    assert main.get_command(context, "server") is main.get_command(context, "lsp")
    assert "language server" in CliRunner().invoke(main, ["server", "--help"]).stdout


def test_check_diff_is_fix_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    script = "import deepspeed\nmodel = Net()\nmodel.cuda()\nengine, *_ = deepspeed.initialize(model=model)\n"
    (tmp_path / "train.py").write_text(script, encoding="utf-8")
    runner = CliRunner()
    shown = runner.invoke(main, ["check", "--diff", "--unsafe-fixes", "train.py"])
    same = runner.invoke(main, ["fix", "--diff", "--unsafe-fixes", "train.py"])
    assert shown.exit_code == same.exit_code == 1 and shown.stdout == same.stdout
    assert "-model.cuda()" in shown.stdout
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == script, "nothing written"
