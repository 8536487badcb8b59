"""The project index in the language server: what `dslint check` on the document's project knows about the
document from elsewhere (launchers, configs, engines and models that cross functions and modules), so that an
open file shows the findings the command line shows for it.

The index is built in the full-lint worker process, over the document's project: the directory of the
pyproject.toml that configures dslint there, else the nearest directory that looks like a project root (the one
whose pins give the DeepSpeed version), else the document's own directory. It reads the files as saved on disk
(the open document's own text is what its lint reads) and is kept until the server says that a file was saved
(a new `generation`), when it is built again on the next full lint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dslint.lint.files import discover
from dslint.project.index import build_project_index, single_file_facts
from dslint.project.project_index import ConfigReading, ProjectIndex
from dslint.script.project_facts import ProjectFacts
from dslint.settings import SettingsResolver


@dataclass(frozen=True)
class DocumentProject:
    """What the project index says about one document: its facts, and who reads it when it is a config."""

    facts: ProjectFacts | None
    config_reading: ConfigReading | None


_INDEXES: dict[Path, tuple[int, ProjectIndex]] = {}  # project directory -> (generation built at, index)


def project_directory(path: str, resolver: SettingsResolver) -> Path:
    """Where the project of the document at `path` starts (see the module's docs)."""
    settings = resolver.for_path(Path(path))
    if settings.project.path is not None:
        return settings.project.path.parent
    if settings.pins_root is not None:
        return settings.pins_root
    return Path(path).resolve().parent


_RESOLVER: list[tuple[int, SettingsResolver]] = []  # the settings as of a generation (a save may change them)


def document_project(path: str, data: bytes, generation: int) -> DocumentProject:
    """The project facts for the document at `path` (whose current text is `data`), from the index of its
    project as of `generation`; a file the index does not know gets what it says itself, as in `dslint check`."""
    if not _RESOLVER or _RESOLVER[0][0] != generation:
        _RESOLVER[:] = [(generation, SettingsResolver())]
    resolver = _RESOLVER[0][1]
    directory = project_directory(path, resolver)
    cached = _INDEXES.get(directory)
    if cached is None or cached[0] != generation:
        files = discover((str(directory),), suffixes=(".py",), excluded=resolver.excluded).files
        cached = (generation, build_project_index(files, (str(directory),)))
        _INDEXES[directory] = cached
    index = cached[1]
    facts = index.facts_for(path)
    if facts is None and path.endswith(".py"):
        facts = single_file_facts(path, data)
    return DocumentProject(facts, index.config_reading(path))
