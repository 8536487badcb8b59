"""Language-server features beyond publishing: the "disable DSLxxx for this line" code action, hover (the rule's
explanation over a finding), settings from the editor (`initializationOptions`), and pull diagnostics
(`textDocument/diagnostic`, LSP 3.17) for clients that ask for findings instead of being sent them."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from dslint.diagnostics import Diagnostic
from dslint.framework.driver_rules import UnusedNoqaCodes
from dslint.framework.registry import all_rules, implementation
from dslint.lint.suppression import add_noqa
from dslint.lsp_positions import PositionCodec, lsp_lines
from dslint.settings import Overrides, SettingsError, SettingsResolver


def disable_for_line(text: str, finding: Diagnostic, codec: PositionCodec) -> types.TextEdit | None:
    """The edit that silences `finding` with a `# noqa: CODE` comment where `dslint check --add-noqa` puts it
    (the end of the statement's last line, or joined to the noqa comment already there); None when none can."""
    if finding.code == implementation(UnusedNoqaCodes).code:  # DSL010 reports noqa comments themselves
        return None
    updated, changed = add_noqa(text, [finding])
    if not changed:
        return None
    old, new = lsp_lines(text), lsp_lines(updated)
    if len(old) != len(new):
        return None
    for number, (before, after) in enumerate(zip(old, new, strict=True)):
        if before != after:
            whole = types.Range(
                start=types.Position(line=number, character=0),
                end=types.Position(line=number, character=codec.units(before)),
            )
            return types.TextEdit(range=whole, new_text=after)
    return None


def wants_pull(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client pulls diagnostics (it then gets no pushed ones for the documents it pulls: a client
    that shows both would show every finding twice)."""
    document = capabilities.text_document if capabilities is not None else None
    return document is not None and document.diagnostic is not None


def can_refresh(capabilities: types.ClientCapabilities | None) -> bool:
    workspace = capabilities.workspace if capabilities is not None else None
    diagnostics = workspace.diagnostics if workspace is not None else None
    return bool(diagnostics is not None and diagnostics.refresh_support)


def full_report(items: list[types.Diagnostic], version: int | None) -> types.RelatedFullDocumentDiagnosticReport:
    return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=f"v{version}")


def hover(findings: list[Diagnostic], text: str, where: types.Position, codec: PositionCodec) -> types.Hover | None:
    """`textDocument/hover`: over a finding, its message and the explanation of its rule (what `dslint explain`
    prints), one section per code found there; None elsewhere."""
    lines = lsp_lines(text)
    at = (where.line, where.character)
    here: dict[str, Diagnostic] = {}
    for finding in findings:
        span = codec.to_range(lines, finding.start, finding.end)
        if (span.start.line, span.start.character) <= at <= (span.end.line, span.end.character):
            here.setdefault(finding.code, finding)
    if not here:
        return None
    rules = {rule.code: rule for rule in all_rules()}
    sections = []
    for code, finding in here.items():
        rule = rules.get(code)
        explanation = rule.docs.render(rule.code, rule.slug) if rule is not None else code
        sections.append(f"**{code}** {finding.message}\n\n{explanation}")
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(sections)))


# `initializationOptions` keys, as editors write them (camelCase) or as pyproject.toml does (kebab-case)
_CODE_LISTS = {
    "select": "select",
    "ignore": "ignore",
    "extendSelect": "extend_select",
    "extend-select": "extend_select",
}
_FLAGS = {"unsafeFixes": "unsafe_fixes", "unsafe-fixes": "unsafe_fixes", "isolated": "isolated"}


def editor_resolver(options: object) -> tuple[SettingsResolver, list[str]]:
    """The settings resolver for the editor's `initializationOptions` (`select`, `ignore`, `extendSelect` as
    lists of codes; `unsafeFixes`, `isolated` as booleans; `config`, a pyproject.toml to use), which win over
    the pyproject as command-line options do; and what was wrong with them (each ignored, the rest applied)."""
    problems: list[str] = []
    values: dict[str, object] = {}
    if options is not None and not isinstance(options, dict):
        return SettingsResolver(), [f"initializationOptions: expected an object, got {type(options).__name__}"]
    for key, value in (options or {}).items():
        if key in _CODE_LISTS and isinstance(value, list) and all(isinstance(code, str) for code in value):
            values[_CODE_LISTS[key]] = tuple(code.strip().upper() for code in value if code.strip())
        elif key in _FLAGS and isinstance(value, bool):
            values[_FLAGS[key]] = value
        elif key == "config" and isinstance(value, str) and value:
            values["config_file"] = Path(value).expanduser()
        else:
            problems.append(f"initializationOptions.{key}: not a dslint setting of that type ({value!r}); ignored")
    try:
        return SettingsResolver(Overrides(**values)), problems  # type: ignore[arg-type]
    except SettingsError as error:
        return SettingsResolver(), [*problems, f"initializationOptions: {error}; the pyproject's settings apply"]


def workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """One document's edits at the version they were computed for (the client refuses them at another)."""
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                edits=list(edits),
            )
        ]
    )
