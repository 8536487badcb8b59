"""Lint DeepSpeed configs: JSON/HJSON files, and the configs that scripts build or point at."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from dslint.config.facts import Origin, mixed_file
from dslint.config.recognition import is_config_name, is_deepspeed_config
from dslint.config.tree import LFS_POINTER, Array, Node, Object, ParseError, parse_text
from dslint.config.versions import NewestAdmitted, Version, config_schema, selected_version
from dslint.config.yaml_config import is_config_yaml_name, read_yaml_config
from dslint.diagnostics import Diagnostic, Location, Related
from dslint.framework.config_rule import ConfigContext, ConfigRule
from dslint.framework.driver_rules import ConfigSyntaxError
from dslint.framework.registry import implementation
from dslint.lint.result import FileResult, config_rules
from dslint.lint.suppression import apply_noqa, might_have_noqa, scan
from dslint.model.library import CHECKPOINTING_CONFIGURED
from dslint.project.config_readers import client_sections
from dslint.project.inputs import shown_path
from dslint.project.project_index import ConfigReading
from dslint.script.project_facts import LaunchWorldSize
from dslint.selection import RuleSelection

if TYPE_CHECKING:  # the script's side (libcst): imported by `check_script_configs`, never for a config file
    from dslint.project.script_configs import ScriptConfig
    from dslint.script.context import ScriptContext


def run_config_rules(context: ConfigContext, rules: Sequence[type[ConfigRule]]) -> list[Diagnostic]:
    mixed = mixed_file(context.root, context.schema)
    for rule in rules:
        if rule.runs_on_mixed_files or not mixed:
            rule(context).check()
    return context.diagnostics


def run_at_both_ends(
    make_context: Callable[[Version], ConfigContext],
    version: Version,
    newest: NewestAdmitted | None,
    rules: Sequence[type[ConfigRule]],
) -> list[Diagnostic]:
    """The config rules' findings at the project's `version` and, when its pin admits a newer release, at that
    release too: what the lowest release reads but a fresh install refuses is reported, naming the pin."""
    found = run_config_rules(make_context(version), rules)
    if newest is None or newest.version == version:
        return found
    at_newest = run_config_rules(make_context(newest.version), rules)
    # a finding of the lowest release that the newest one's refusal says better (`ConfigRule.superseded_at_newest`),
    # or that stands only where the newest reports it too (`ConfigRule.newest_must_agree`)
    superseding = {rule.code: rule.superseded_at_newest for rule in rules if rule.superseded_at_newest}
    agreeing = {rule.code for rule in rules if rule.newest_must_agree}
    newest_found = {(d.code, d.start) for d in at_newest}
    found = [
        d
        for d in found
        if not any((code, d.start) in newest_found for code in superseding.get(d.code, ()))
        and (d.code not in agreeing or (d.code, d.start) in newest_found)
    ]
    seen = {(d.code, d.start) for d in found}
    for diagnostic in at_newest:
        if (diagnostic.code, diagnostic.start) not in seen:
            seen.add((diagnostic.code, diagnostic.start))
            found.append(replace(diagnostic, message=f"{diagnostic.message.rstrip('.')}; {newest.note()}"))
    return found


def decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def lint_config_source(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    *,
    origin: Origin = Origin.FILE,
    world_size: int | None = None,
    known_config: bool = False,
    replaced_keys: frozenset[str] = frozenset(),
    launch_world_sizes: tuple[LaunchWorldSize, ...] = (),
    read_in: tuple[Related, ...] = (),
    reader_sites: tuple[Related, ...] = (),
    checkpointing_configured: bool = True,
    client_sections: frozenset[str] = frozenset(),
) -> FileResult:
    """Lint one config file. `known_config`: a script points at it, so it is a DeepSpeed config whatever its
    name or content; otherwise a file that is not recognisably a DeepSpeed config gets no finding.
    `replaced_keys`: top-level keys the scripts reading the file replace before deepspeed.initialize;
    `reader_sites`: where launches hand the file to a reader that parses it with the strict `json.load`."""
    selection = selection or RuleSelection()
    result = FileResult(path)
    named = known_config or is_config_name(Path(path))
    if data.startswith(LFS_POINTER.encode()):
        result.skipped = True  # a Git LFS pointer: the config itself is not in the checkout, nothing to read
        return result
    text = decode(data)
    if text is None:
        if named and selection.enabled(_parse_error_rule().code):
            error = ParseError("the file is not UTF-8 text", 1, 1)
            result.diagnostics.append(_parse_error_rule().from_error(path, error))
        return result
    try:
        root = parse_text(text)
    except ParseError as error:
        if named and selection.enabled(_parse_error_rule().code):
            result.diagnostics.append(_parse_error_rule().from_error(path, error))
        return result
    if not isinstance(root, Object) or not (known_config or is_deepspeed_config(root, named)):
        result.skipped = True
        return result
    result.parsed = True
    result.text = text
    if reader_sites and origin in STRICT_READERS and selection.enabled(_parse_error_rule().code):
        strict = _strict_json_error(text, STRICT_READERS[origin], reader_sites[0])
        if strict is not None:
            finding = _parse_error_rule().from_error(path, strict)
            result.diagnostics.append(replace(finding, related=reader_sites))

    def context_at(version: Version) -> ConfigContext:
        return ConfigContext(
            path,
            root,
            origin,
            world_size,
            load_source=lambda: text,
            schema=config_schema(version),
            deepspeed_version=version,
            replaced_keys=replaced_keys,
            launch_world_sizes=launch_world_sizes,
            batch_at_launches=True,
            read_in=read_in,
            checkpointing_configured=checkpointing_configured,
            client_sections=client_sections,
        )

    version = selected_version(selection.deepspeed_version)
    newest = NewestAdmitted.of(selection.deepspeed_newest, selection.deepspeed_pin)
    result.diagnostics.extend(run_at_both_ends(context_at, version, newest, config_rules(selection)))
    result.diagnostics.sort(key=lambda d: d.sort_key)
    if might_have_noqa(text):  # the noqa comments of a config with comments (HJSON, JSON with comments)
        suppressed = apply_noqa(path, text, result.diagnostics, selection, config=True)
        result.diagnostics, result.suppressed = suppressed.diagnostics, suppressed.suppressed
    return result


# The readers that open a config path with the standard library's strict `json.load` (no trailing comma, no
# comment), where DeepSpeed's own `hjson.load` takes both: Lightning's `DeepSpeedStrategy._load_config`, and
# `HfDeepSpeedConfig` (the Hugging Face Trainer's `--deepspeed`, accelerate's `deepspeed_config_file`).
STRICT_READERS = {Origin.TRAINER: "the Hugging Face integration", Origin.LIGHTNING: "Lightning's DeepSpeedStrategy"}


def _strict_json_error(text: str, reader: str, site: Related) -> ParseError | None:
    """Where `json.load` stops on a config that hjson reads, as a parse error naming the reader; None when the
    text is strict JSON."""
    try:
        json.loads(text)
        return None
    except json.JSONDecodeError as error:
        at, what = error.pos, error.msg
    before = at - 1
    while before >= 0 and text[before] in " \t\r\n":
        before -= 1
    if before >= 0 and text[before] == "," and at < len(text) and text[at] in "}]":
        at, what = before, f"a trailing comma before '{text[at]}'"
    elif text.startswith(("//", "/*", "#"), at):
        what = "a comment"
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return ParseError(f"{reader} reads it with json.load ({site.path}:{site.line}): {what}", line, column)


def lint_yaml_config_source(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    *,
    world_size: int | None = None,
    reading: ConfigReading | None = None,
) -> FileResult:
    """Lint a YAML file that holds a DeepSpeed config (`config.yaml_config`: the whole file, or its `deepspeed:`
    section); any other YAML file is skipped. Findings carry no fix unless the file is JSON text: the fixes
    write JSON. Text beyond the YAML read is one warning at its line and column, in a file named like a
    DeepSpeed config or named by code or a launcher (`reading`, from the project index), else the file is
    skipped."""
    selection = selection or RuleSelection()
    known = reading is not None and reading.named
    result = FileResult(path, skipped=True)
    text = decode(data)
    if text is None:
        return result
    version = selected_version(selection.deepspeed_version)
    try:
        config = read_yaml_config(Path(path), text, known, config_schema(version))
    except ParseError as error:
        rule = _parse_error_rule()
        if (known or is_config_yaml_name(Path(path))) and selection.enabled(rule.code):
            reason = ParseError(f"not read: {error.message} (YAML beyond what dslint reads)", error.line, error.column)
            result.diagnostics.append(rule.not_read(path, reason))
            result.skipped = False
        return result
    if config is None:
        return result
    result.skipped, result.parsed, result.text = False, True, text

    def context_at(at: Version) -> ConfigContext:
        return ConfigContext(
            path,
            config.tree,
            reading.origin if reading is not None else Origin.FILE,
            world_size,
            # YAML as `yaml.safe_load`/OmegaConf hand it over: a dict (duplicate keys: the last one wins)
            from_file=config.json_text,
            load_source=(lambda: text) if config.json_text else None,
            schema=config_schema(at),
            deepspeed_version=at,
            replaced_keys=reading.replaced if reading is not None and config.section is None else frozenset(),
            launch_world_sizes=reading.world_sizes if reading is not None else (),
            batch_at_launches=True,
            read_in=reading.read_in if reading is not None else (),
            checkpointing_configured=reading.checkpointing_configured if reading is not None else True,
            client_sections=reading.client_sections if reading is not None else frozenset(),
        )

    newest = NewestAdmitted.of(selection.deepspeed_newest, selection.deepspeed_pin)
    result.diagnostics.extend(run_at_both_ends(context_at, version, newest, config_rules(selection)))
    result.diagnostics.sort(key=lambda d: d.sort_key)
    if might_have_noqa(text):
        suppressed = apply_noqa(path, text, result.diagnostics, selection, config=True)
        result.diagnostics, result.suppressed = suppressed.diagnostics, suppressed.suppressed
    return result


def _without_silenced(path: str, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """`diagnostics` in the config file `path` less those its own noqa comments silence (as on its own)."""
    if not diagnostics:
        return diagnostics
    try:
        text = decode(Path(path).read_bytes())
    except OSError:
        return diagnostics
    if text is None or not might_have_noqa(text):
        return diagnostics
    index = scan(text, config=True)
    return [d for d in diagnostics if d.path != path or not index.silences(d)]


def _script_config_context(
    config: ScriptConfig,
    world_size: int | None,
    load_source: Callable[[], str] | None,
    clients: frozenset[str],
    applied: bool,
    read_in: tuple[Related, ...],
    version: Version,
) -> ConfigContext:
    return ConfigContext(
        config.path,
        config.tree,
        config.origin,
        world_size=world_size,
        from_file=config.from_file,
        load_source=load_source,
        schema=config_schema(version),
        deepspeed_version=version,
        # the sections this script's initialize calls replace with client objects are never built
        replaced_keys=clients if config.origin is Origin.INITIALIZE else frozenset(),
        checkpointing_configured=applied,
        read_in=read_in,
        # a file other scripts may read too: whether every reader replaces a section is the project index's
        # answer (`ConfigReading.client_sections`, over all of them), given when the file itself is linted
        client_sections=clients if config.origin is Origin.INITIALIZE and not config.from_file else frozenset(),
    )


def _in_their_files(tree: Object, found: list[Diagnostic]) -> list[Diagnostic]:
    """A finding on a key (or its value) that the script writes into a config loaded from a file is positioned in
    the script: give it the script's path (`Entry.source`)."""
    spans: dict[tuple[Location, Location], str] = {}
    todo: list[tuple[Node, str | None]] = [(tree, None)]
    while todo:
        node, source = todo.pop()
        if isinstance(node, Object):
            for entry in node.entries:
                written = entry.source or source
                if written is not None:
                    spans[(entry.key_start, entry.key_end)] = written
                    spans[(entry.value.start, entry.value.end)] = written
                todo.append((entry.value, written))
        elif isinstance(node, Array):
            todo.extend((item, source) for item in node.items)
    if not spans:
        return found
    return [replace(d, path=spans[(d.start, d.end)]) if (d.start, d.end) in spans else d for d in found]


def _parse_error_rule() -> type[ConfigSyntaxError]:
    return implementation(ConfigSyntaxError)


def check_script_configs(
    context: ScriptContext, rules: Sequence[type[ConfigRule]], world_size: int | None = None
) -> list[Diagnostic]:
    """The config rules' findings on the configs `context`'s script builds or points at (each once)."""
    if not rules:
        return []
    from dslint.project.script_configs import script_configs, unreadable_configs

    diagnostics: list[Diagnostic] = []
    configs = script_configs(context)
    encoded = context.text.encode("utf-8", errors="replace")
    clients = client_sections(encoded) if configs else frozenset()
    project = context.facts.project
    applied = project.checkpointing_applied if project is not None else None
    if applied is None:  # the script's own text: it calls `deepspeed.checkpointing.configure`, or brings Megatron
        applied = any(token in encoded for token in CHECKPOINTING_CONFIGURED)
    for config in configs:
        # Fixes only for a dict literal, which is the script's own text; a file is fixed on its own.
        load_source = None if config.from_file else (lambda: context.text)
        # a module no launch starts, reading the file its importer's launch names: DeepSpeed reads it there
        imported = project is not None and not project.launches and bool(project.importer_launches)
        read_by = config.read_by
        read_in = (replace(read_by, path=shown_path(read_by.path)),) if imported and read_by is not None else ()
        context_at = functools.partial(
            _script_config_context, config, world_size, load_source, clients, applied, read_in
        )
        found = run_at_both_ends(context_at, context.deepspeed_version, context.deepspeed_newest, rules)
        if config.from_file:
            found = _without_silenced(config.path, found)
            found = _in_their_files(config.tree, found)
            if config.read_by is not None:  # a finding in the file names the call that makes it DeepSpeed's
                by = config.read_by
                found = [d if by in d.related else replace(d, related=(*d.related, by)) for d in found]
        for reader in config.reader:  # a builder's dict: name the reader elsewhere that receives it
            where = f" ({reader.message}, {reader.path}:{reader.line})"
            found = [replace(d, message=d.message + where, related=(*d.related, reader)) for d in found]
        diagnostics.extend(found)
    parse_error = _parse_error_rule()
    if any(rule.code == parse_error.code for rule in rules):
        known = [config.key for config in configs if config.key is not None]
        for path, error, not_read in unreadable_configs(context, known):
            diagnostics.append(parse_error.not_read(path, error) if not_read else parse_error.from_error(path, error))
    return diagnostics
