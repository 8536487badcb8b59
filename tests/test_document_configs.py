"""DeepSpeed configs written out in Markdown and reStructuredText documents (fixtures/projects/doc_configs): the config
rules on a JSON code block the document ties to the config file it names or launches, at the document's own lines,
read as that file is read and judged by the DeepSpeed the document's folder pins; every other JSON block silent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_support import FIXTURES

from dslint.cli import main
from dslint.commands.check import run_check
from dslint.diagnostics import Diagnostic
from dslint.lint.batch import index_project
from dslint.lint.files import discover
from dslint.project import index as project_index
from dslint.project.document_configs import DocumentLaunch, config_tree, document_configs
from dslint.settings import SettingsResolver

PROJECT = FIXTURES / "projects" / "doc_configs"


def _findings(path: Path = PROJECT) -> list[Diagnostic]:
    outcome = run_check(SettingsResolver(), (str(path),))
    assert not outcome.errors
    return sorted((d for r in outcome.results for d in r.diagnostics), key=lambda d: (d.path, d.sort_key))


def test_the_pasted_configs_are_checked_where_the_document_writes_them() -> None:
    found = sorted(  # a config file is checked on its own and through the script it is launched with
        {
            (os.path.relpath(os.path.abspath(d.path), PROJECT), d.start.line, d.start.column, d.code, d.message)
            for d in _findings()
        }
    )
    expected = [
        ("QUICKSTART.md", 8, 32, "DSL413", "a fixed fp16 loss scale does not adapt to overflows"),
        ("TUTORIAL.md", 13, 3, "DSL401", "DeepSpeed ignores unknown key `min_lr` silently"),
        ("TUTORIAL.md", 17, 5, "DSL403", "`zero_optimization` has no key `overlap_com`"),
        ("TUTORIAL.md", 18, 5, "DSL409", "offload_param needs ZeRO stage 3; at stage 2 DeepSpeed ignores it"),
        # the launched loop hands the file to initialize: "auto" fails there (the Trainer's block is silent)
        ("guide/guide.rst", 19, 6, "DSL405", 'write a value for `train_micro_batch_size_per_gpu`, not "auto"'),
        ("guide/guide.rst", 22, 15, "DSL408", "fp16 and bf16 are both enabled"),
        # the folder pins DeepSpeed 0.9.2: the misspelt key is ignored there, not refused
        ("legacy/README.md", 8, 12, "DSL420", "`bf16.enable` is ignored silently by DeepSpeed 0.9.2"),
        # shipped/README.md shows the file: the file is checked, its copies in the document are not
        ("shipped/ds_zero2.json", 3, 37, "DSL409", "offload_param needs ZeRO stage 3"),
        # the shipped ZeRO-2 file names no optimizer, nor does the script's initialize
        ("shipped/train.py", 13, 23, "DSL452", "ZeRO stage 2 needs an optimizer"),
    ]
    assert [f[:4] for f in found] == [e[:4] for e in expected]
    for (*_, message), (*_, start) in zip(found, expected, strict=True):
        assert message.startswith(start), message


def test_nothing_is_offered_to_write_into_a_document() -> None:
    documents = [d for d in _findings() if d.path.endswith((".md", ".rst"))]
    assert documents and all(d.fix is None for d in documents)


def test_a_launch_whose_config_the_document_writes_out_is_not_missing_its_file() -> None:
    """QUICKSTART.md, guide.rst and legacy/README.md launch configs no file of the project holds: their
    blocks are the files to save (no DSL423)."""
    assert not [d for d in _findings() if d.code == "DSL423"]


def test_json_that_is_no_deepspeed_config_stays_silent() -> None:
    """api/README.md: a model's config.json, a job record holding `train_batch_size` (tied by the document's
    one launch, but no config by its content), the settings a server returns (a JSON name the document gives
    it); TUTORIAL.md's excerpt ("add this") has no batch key."""
    assert not [d for d in _findings() if d.path.endswith("api/README.md")]
    assert not [d for d in _findings() if d.path.endswith("TUTORIAL.md") and d.start.line > 22]


def _launch(name: str, reader: str = "initialize") -> DocumentLaunch:
    return DocumentLaunch(name, reader, None, None)


WHOLE = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2}\n}\n'


@pytest.mark.parametrize(
    ("text", "launches", "tied"),
    [
        # the text names the launched file, or one named like a DeepSpeed config
        ("Save it as `ds.json`:\n\n```json\n" + WHOLE + "```\n", ["ds.json"], "ds.json"),
        ("Write `zero2.json`:\n```json\n" + WHOLE + "```\n", [], "zero2.json"),
        ('```json title="ds_config.json"\n' + WHOLE + "```\n", [], "ds_config.json"),
        # no name: the document's one launched config
        ("Then:\n\n```\n" + WHOLE + "```\n", ["run.json", "run.json"], "run.json"),
        # another file's name; two launched configs and no name; no launch, no name
        ("The server's `settings.json`:\n```json\n" + WHOLE + "```\n", ["ds.json"], None),
        ("Then:\n\n```json\n" + WHOLE + "```\n", ["a.json", "b.json"], None),
        ("```json\n" + WHOLE + "```\n", [], None),
        # not JSON by its language; an excerpt; a config that does not parse; a fence never closed
        ("`ds_config.json`:\n```yaml\n" + WHOLE + "```\n", [], None),
        ('`ds_config.json`:\n```json\n{"zero_optimization": {"stage": 2}}\n```\n', [], None),
        ('`ds_config.json`:\n```json\n{"train_batch_size": 8, ...}\n```\n', [], None),
        ("`ds_config.json`:\n```json\n" + WHOLE, [], None),
        # no name, several launched configs, but the text calls it a DeepSpeed config
        ("## DeepSpeed Configuration\n\n```json\n" + WHOLE + "```\n", ["a.json", "b.json"], ""),
        ("## Training settings\n\n```json\n" + WHOLE + "```\n", ["a.json", "b.json"], None),
        # an abridged config: `...` in a comment
        ("`ds_config.json`:\n```jsonc\n" + WHOLE.replace("}\n}", "}\n  // ...\n}") + "```\n", [], None),
    ],
)
def test_which_markdown_blocks_are_configs(text: str, launches: list[str], tied: str | None) -> None:
    found = document_configs("README.md", text, [_launch(name) for name in launches])
    assert [config.name for config in found] == ([tied] if tied is not None else [])


def test_a_block_tied_by_its_launch_alone_must_look_like_a_config() -> None:
    """Named like a config, mostly DeepSpeed keys are enough; tied by the launch alone, an application's
    settings that hold a batch size are not taken for one."""
    settings = '{"train_batch_size": 8, "learning_rate": 0.1, "epochs": 3, "model": "gpt2"}'
    assert document_configs("a.md", f"`ds_config.json`:\n```json\n{settings}\n```\n", [])
    assert not document_configs("a.md", f"Then:\n```json\n{settings}\n```\n", [_launch("ds_config.json")])


def test_a_copy_of_a_shipped_config_is_left_to_the_file() -> None:
    """The file the text names, or the launch passes, is in the project: it is checked itself."""
    text = "Current config (`configs/ds_config.json`):\n```json\n" + WHOLE + "```\n"
    assert not document_configs("a.md", text, [], shipped=lambda path: path == "configs/ds_config.json")
    assert document_configs("a.md", text, [], shipped=lambda path: False)
    launched = DocumentLaunch("ds.json", "initialize", None, "/project/ds.json")
    assert not document_configs("a.md", "Then:\n```json\n" + WHOLE + "```\n", [launched])
    assert document_configs("a.md", "Then:\n```json\n" + WHOLE + "```\n", [_launch("ds.json")])


def test_rst_blocks_and_their_positions() -> None:
    text = (
        "Save as ``ds_z2.json``::\n"
        "\n"
        "    {\n"
        '      "train_batch_size": 8,\n'
        '      "bogus": 1\n'
        "    }\n"
        "\n"
        ".. code-block:: json\n"
        "   :caption: zero3.json\n"
        "\n"
        '   {"train_batch_size": 8, "zero_optimization": {"stage": 3}}\n'
        "\n"
        ".. code-block:: python\n"
        "\n"
        '   {"train_batch_size": 8}\n'
    )
    first, second = document_configs("guide.rst", text, [])
    assert (first.name, first.first, first.last) == ("ds_z2.json", 2, 6)
    assert (second.name, second.first, second.last) == ("zero3.json", 10, 11)
    tree = config_tree(text, first)
    assert tree is not None
    bogus = tree.entries[1]
    assert (bogus.key, bogus.key_start.line, bogus.key_start.column) == ("bogus", 5, 7)


def test_documents_without_a_config_key_are_not_read_for_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocks of a document are read only when its bytes hold a key only DeepSpeed configs carry."""

    def refuse(*args: object) -> list[object]:
        raise AssertionError(f"blocks read: {args[0]}")

    monkeypatch.setattr(project_index, "document_configs", refuse)
    folder = FIXTURES / "projects" / "doc_launchers"
    index = index_project(discover([str(folder)]).files, [str(folder)])
    assert index.launches and not index.document_configs


def test_a_markdown_only_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "README.md").write_text(
        "Write `ds_config.json`:\n\n```json\n"
        '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 1, "offload_param": {"device": "cpu"}}\n}\n'
        "```\n\n```bash\ndeepspeed train.py --deepspeed --deepspeed_config ds_config.json\n```\n",
        encoding="utf-8",
    )
    (tmp_path / "NOTES.md").write_text("Nothing to run here.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for cached in (False, True, True):  # a cold run, then one that writes the cache, then one served from it
        options = ["--cache-dir", str(tmp_path / "cache")] if cached else ["--no-cache"]
        outcome = CliRunner().invoke(main, ["check", ".", "--output-format", "concise", *options])
        assert outcome.exit_code == 1, outcome.output
        assert outcome.stdout.splitlines() == [
            "README.md:6:37: DSL409 [error] offload_param needs ZeRO stage 3; at stage 1 DeepSpeed ignores it "
            "(use offload_optimizer)"
        ]
