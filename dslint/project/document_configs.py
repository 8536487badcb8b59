"""DeepSpeed configs written out in documents: a tutorial's JSON code block that the reader is told to save as the
config its launch command passes (`deepspeed --num_gpus 4 train.py --deepspeed ds_config.json`).

A code block of a Markdown (`.md`) or reStructuredText (`.rst`) document is a DeepSpeed config, checked by the
config rules at its own lines of the document, when all of these hold:

1. it is a fenced Markdown block (``` or ~~~) or an reST literal block (`::`, `.. code-block::`), written with no
   language or as JSON (`json`, `jsonc`, `json5`, `hjson`);
2. its text parses as JSON, with the comments and trailing commas that dslint's config reader takes (no HJSON),
   into an object;
3. the document ties it to a config file name:
   - the text right before it (up to three lines of the paragraph above the block, after any blank lines, with
     the fence's info string or the directive's options: "Save this as `ds_config.json`:") names a `.json` or
     `.hjson` file that a launch command of the document passes as its DeepSpeed config
     (`LaunchLine.config_option`), or whose name is a DeepSpeed config's (`recognition.is_config_name`:
     `ds_config*.json`, `zero*.json`, `*deepspeed*.json`, ...);
   - or that text names no `.json`/`.hjson` file, and the launch commands of the document that pass a config
     all pass one file name: the document's one config;
   - or that text names no `.json`/`.hjson` file, and calls the block a DeepSpeed config ("## DeepSpeed
     Configuration", "the following DeepSpeed config:");
4. it is a whole config, recognised as a file would be (`recognition.is_whole_config`): `train_batch_size` or
   `train_micro_batch_size_per_gpu` at its top level, and DeepSpeed's own keys (a name like a config's makes
   mostly DeepSpeed keys enough; a block tied by the launch alone must look like one by its content), with no
   `...` (or `…`) anywhere in it, which marks an excerpt even inside a comment (`// ...`);
5. the file it is tied to is not one the project ships: a launch passing it names no file of the project, and the
   name the text writes is no file found from the document as launchers' paths are (`inputs.find_written`). A
   shipped file is checked itself; the block shows it (`### Current config (ds_config.json)`).

Anything else stays silent: a JSON block of an API response or a model's `config.json` (no batch key, no
DeepSpeed name), an excerpt of a config (no batch key, or `...`), a block the text ties to another JSON file, a
block in a document whose launches pass several configs and whose text names none, a block that does not parse,
a copy of a shipped config, a notebook's Markdown cell. Who reads the block is who reads the launches of the
document that pass it (`ProjectIndex.document_reading`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dslint.config.recognition import is_config_name, is_whole_config, mentions_strong_key
from dslint.config.tree import Object, ParseError, parse_text
from dslint.project.launch_documents import CodeBlock, code_blocks
from dslint.script.project_facts import LaunchWorldSize

DOCUMENT_CONFIG_SUFFIXES = (".md", ".rst")
JSON_LANGUAGES = frozenset({"", "json", "jsonc", "json5", "hjson"})
LEAD_LINES = 3  # the lines of text before a block that may name its file
_JSON_NAME = re.compile(r"[\w.~/-]*\w\.h?json\b", re.IGNORECASE)
_SAYS_CONFIG = re.compile(r"\bdeepspeed[\s_-]+config", re.IGNORECASE)  # "## DeepSpeed Configuration"


@dataclass(frozen=True)
class DocumentLaunch:
    """A launch command of a document that passes a DeepSpeed config file."""

    name: str  # the file name of the path written (`./configs/ds_config.json` -> `ds_config.json`)
    reader: str  # who reads it (`config_reading.config_reader_of`)
    world: LaunchWorldSize | None  # the ranks the command starts, where it says
    path: str | None  # the project's file the path names (absolute), when there is one


@dataclass(frozen=True)
class DocumentConfig:
    """A DeepSpeed config written out in a document: its code block's body lines (1-based, inclusive) and the
    config file the document ties it to."""

    first: int
    last: int
    name: str
    named_like_one: bool  # the document names it like a DeepSpeed config (not only through its launch)
    readers: tuple[str, ...] = ()  # the readers of the document's launches passing `name`
    world_sizes: tuple[LaunchWorldSize, ...] = ()
    # the lines as they are written to the file, where they differ from the document's (a shell launcher's heredoc
    # with its variables expanded: `written_configs.written_config_documents`); empty: the document's own lines
    text_lines: tuple[str, ...] = ()


def may_hold_config(data: bytes) -> bool:
    """The cheap test before a document's blocks are read: a key only DeepSpeed configs carry, quoted."""
    return mentions_strong_key(data)


def document_configs(
    name: str,
    text: str,
    launches: Sequence[DocumentLaunch],
    shipped: Callable[[str], bool] = lambda written: False,
) -> list[DocumentConfig]:
    """The DeepSpeed configs written out in the document `name` (by its suffix: Markdown or reStructuredText),
    whose `launches` pass config files (see the module's docstring for the rule); `shipped(path)`: whether a
    path the text writes names a file of the project."""
    if not name.endswith(DOCUMENT_CONFIG_SUFFIXES):
        return []
    lines = text.splitlines()
    blocks = code_blocks(name, text)
    code = {number for block in blocks for number in range(block.opening, block.last + 1)}
    code.update(block.last + 1 for block in blocks if _is_fence(lines, block.last + 1))  # a closing fence
    launched = {launch.name for launch in launches}
    found: list[DocumentConfig] = []
    for block in blocks:
        body = [line.strip() for line in lines[block.first - 1 : block.last] if line.strip()]
        if block.language not in JSON_LANGUAGES or not body or not body[0].startswith("{"):
            continue
        if any("..." in line or "\u2026" in line for line in body):
            continue  # an excerpt
        lead = _lead(lines, block, code)
        written = [match.group(0) for said in lead for match in _JSON_NAME.finditer(said)]
        says = any(_SAYS_CONFIG.search(said) for said in lead)
        name_tied = _tied_name([os.path.basename(path) for path in written], launched, says)
        if name_tied is None:
            continue
        tied, named_like_one = name_tied
        passing = [launch for launch in launches if launch.name == tied]
        if any(launch.path is not None for launch in passing) or any(
            os.path.basename(path) == tied and shipped(path) for path in written
        ):
            continue  # a copy of a file the project ships, which is checked itself
        root = _parse(lines, block.first, block.last)
        if root is None or not is_whole_config(root, named_like_one):
            continue
        found.append(
            DocumentConfig(
                block.first,
                block.last,
                tied,
                named_like_one,
                tuple(dict.fromkeys(launch.reader for launch in passing)),
                tuple(launch.world for launch in passing if launch.world is not None),
            )
        )
    return found


def config_tree(text: str, config: DocumentConfig) -> Object | None:
    """The config's tree, positioned at the document's own lines and columns (None when the block no longer
    parses: the document changed); a heredoc's lines as the shell writes them, at their launcher lines."""
    if config.text_lines:
        lines = [""] * (config.first - 1) + list(config.text_lines)
        return _parse(lines, config.first, config.first + len(config.text_lines) - 1)
    return _parse(text.splitlines(), config.first, config.last)


def _parse(lines: list[str], first: int, last: int) -> Object | None:
    """The block's lines parsed in place: every other line of the document blank, so that positions are the
    document's."""
    blanked = "\n" * (first - 1) + "\n".join(lines[first - 1 : last]) + "\n"
    try:
        root = parse_text(blanked, hjson=False)
    except ParseError:
        return None
    return root if isinstance(root, Object) else None


def _is_fence(lines: list[str], number: int) -> bool:
    return 1 <= number <= len(lines) and lines[number - 1].lstrip().startswith(("```", "~~~"))


def _lead(lines: list[str], block: CodeBlock, code: set[int]) -> list[str]:
    """The text right before `block`, which may name its file: up to LEAD_LINES lines of the paragraph or heading
    above it, and its opening line's own words (a fence's info string, a directive's options, an reST
    paragraph ending with `::`)."""
    lead = [block.info]
    if not lines[block.opening - 1].lstrip().startswith(("```", "~~~", "..")):
        lead.append(lines[block.opening - 1])  # "Save it as ds_config.json::"
    number = block.opening - 1
    while number >= 1 and not lines[number - 1].strip() and number not in code:
        number -= 1
    taken = 0
    while number >= 1 and lines[number - 1].strip() and number not in code and taken < LEAD_LINES:
        lead.append(lines[number - 1])
        number -= 1
        taken += 1
    return lead


def _tied_name(names: list[str], launched: set[str], says_config: bool) -> tuple[str, bool] | None:
    """The config file a block is tied to ("" when the text only calls it a DeepSpeed config), and whether it is
    named like a DeepSpeed config; None when untied."""
    if names:
        for name in names:
            if name in launched or is_config_name(Path(name)):
                return name, is_config_name(Path(name))
        return None
    if len(launched) == 1:
        (name,) = launched
        return name, False
    return ("", False) if says_config else None
