"""Lint one file, a script or a config, from its bytes or from its text: the entry point that the commands, the
fixer, the editor server, flake8 and the runtime check share."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Iterable
from pathlib import Path

from dslint.config.accelerate import YAML_SUFFIXES
from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.diagnostics import Diagnostic
from dslint.limits import Limits
from dslint.lint.result import FileResult
from dslint.project.project_index import ConfigReading
from dslint.script.project_facts import ProjectFacts
from dslint.selection import RuleSelection

# The script and config drivers (and with them libcst and every rule) are imported when a file needs them: a
# script that no rule can touch is settled from the rule catalog (`certainly_untouched`) without them.

NOTEBOOK = ".ipynb"  # dslint.notebook.SUFFIX (imported lazily: the notebook module imports this one)


def lint_file(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    world_size: int | None = None,
    limits: Limits | None = None,
    project: ProjectFacts | None = None,
    config_reader: ConfigReading | None = None,
) -> FileResult:
    """Lint `data` as the contents of `path`: a config, an accelerate config or a notebook when its suffix says so
    (.json, .yaml, .ipynb, ...),
    else a script. `project`: what the project index knows about a script (by default what the file itself
    says: `single_file_facts`); `config_reader`: who reads a config, as the project index knows it
    (`ConfigReading`: a config a launcher or script names is a DeepSpeed config whatever its name)."""
    if Path(path).suffix.lower() in CONFIG_SUFFIXES:
        return lint_config_file(path, data, selection, config_reader, world_size)
    if Path(path).suffix.lower() in YAML_SUFFIXES:  # an accelerate config, or a DeepSpeed config in YAML
        from dslint.lint.accelerate import lint_accelerate_source

        given = config_reader is not None and config_reader.precision_on_command_line
        in_code = config_reader.given_in_code if config_reader is not None else frozenset()
        result = lint_accelerate_source(path, data, selection, precision_on_command_line=given, given_in_code=in_code)
        if not result.skipped:
            return result
        from dslint.lint.config import lint_yaml_config_source

        return lint_yaml_config_source(path, data, selection, world_size=world_size, reading=config_reader)
    if Path(path).suffix.lower() == NOTEBOOK:
        from dslint.lint.notebook import lint_notebook  # raises NotebookError for a file that is not one

        return lint_notebook(path, data, selection, world_size, limits)
    from dslint.lint.activation import certainly_untouched  # the catalog's tests: only when a script is linted

    if certainly_untouched(data, project):
        return FileResult(path, skipped=True)
    from dslint.lint.script import lint_source
    from dslint.project.index import single_file_facts

    if project is None:
        project = single_file_facts(path, data)
    return lint_source(path, data, selection, world_size, limits=limits, project=project)


def lint_config_file(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    reading: ConfigReading | None = None,
    world_size: int | None = None,
    known_config: bool = False,
) -> FileResult:
    """Lint a config file as its readers see it (`reading`, from the project index: who reads it, the keys they
    replace first); `known_config`: a script names it (a DeepSpeed config whatever its name)."""
    from dslint.lint.config import lint_config_source  # the config driver, imported when a config is linted

    if reading is None:
        return lint_config_source(path, data, selection, world_size=world_size, known_config=known_config)
    return lint_config_source(
        path,
        data,
        selection,
        origin=reading.origin,
        world_size=world_size,
        known_config=reading.named or known_config,
        replaced_keys=reading.replaced,
        launch_world_sizes=reading.world_sizes,
        read_in=reading.read_in,
        reader_sites=reading.reader_sites,
        checkpointing_configured=reading.checkpointing_configured,
        client_sections=reading.client_sections,
    )


def lint_text(
    path: str,
    text: str,
    selection: RuleSelection | None = None,
    limits: Limits | None = None,
    project: ProjectFacts | None = None,
) -> list[Diagnostic]:
    """The findings of `text` as the contents of `path` (text, not bytes: positions are in characters of `text`;
    a script is encoded as its PEP 263 cookie says). `project`: as for `lint_file`."""
    encoding = source_encoding(text)
    try:
        data = text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        data = text.encode("utf-8")
    return lint_file(path, data, selection, limits=limits, project=project).diagnostics


def own_findings(path: str, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The findings located in `path` itself: a script's result also holds findings inside the config files it
    points at, which an editor or flake8 showing this one file must leave out."""
    return [d for d in diagnostics if d.path == path]


def source_encoding(text: str) -> str:
    """The codec a PEP 263 cookie in `text`'s first two lines names (UTF-8 without one)."""
    head = "\n".join(text.splitlines()[:2]).encode("utf-8", "replace")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
    except SyntaxError:
        return "utf-8"
    return "utf-8" if encoding == "utf-8-sig" else encoding
