"""`dslint lsp`: a language server (pygls 2) over stdio.

It publishes diagnostics when a Python document is opened, changed or saved (the same linter, settings and noqa
handling as `dslint check`), offers a quick fix (code action) for each finding that has a fix, and a
"fix all safe fixes" source action (`source.fixAll.dslint`) that applies them through the fixer's verified
rounds. Linting runs off the event loop; a result is only published while its document version is current, and
rapid edits coalesce into one run with the newest text.

LSP positions are 0-based lines and UTF-16 code units; dslint's are 1-based lines and 1-based characters.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from dslint import __version__
from dslint.diagnostics import Diagnostic, Edit, Location, Severity
from dslint.fixer import fix_text
from dslint.linter import lint_source
from dslint.selection import RuleSelection
from dslint.settings import SettingsError, SettingsResolver

LINE_BREAK = re.compile(r"\r\n|\r|\n")
SOURCE = "dslint"
FIX_ALL_KIND = "source.fixAll.dslint"
SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def utf16_column(line: str, column: int) -> int:
    """The UTF-16 offset of the 0-based character `column` of `line`."""
    prefix = line[:column]
    if prefix.isascii():
        return len(prefix) + max(column - len(line), 0)
    return len(prefix.encode("utf-16-le")) // 2 + max(column - len(line), 0)


def to_position(lines: list[str], location: Location) -> types.Position:
    line = location.line - 1
    if line >= len(lines):
        return types.Position(line=len(lines), character=0)
    return types.Position(line=line, character=utf16_column(lines[line], location.column - 1))


def to_range(lines: list[str], start: Location, end: Location) -> types.Range:
    return types.Range(start=to_position(lines, start), end=to_position(lines, end))


def _end_of(text: str, lines: list[str]) -> types.Position:
    if not lines or text.endswith(("\n", "\r")):
        return types.Position(line=len(lines), character=0)
    return types.Position(line=len(lines) - 1, character=utf16_column(lines[-1], len(lines[-1])))


def _lines(text: str) -> list[str]:
    """Lines as LSP counts them: only CR, LF and CRLF end a line."""
    parts = LINE_BREAK.split(text)
    if parts and parts[-1] == "":
        parts.pop()
    return parts


@dataclass
class DocumentState:
    """The findings last published for one document, kept to answer code actions."""

    version: int | None
    text: str
    path: str
    selection: RuleSelection
    unsafe_fixes: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)


class DslintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("dslint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.resolver = SettingsResolver()
        self.states: dict[str, DocumentState] = {}
        self.wanted: dict[str, int | None] = {}  # uri -> newest version seen
        self.running: set[str] = set()
        self.lock = threading.Lock()

    # -- linting ---------------------------------------------------------------------------------------------

    def settings_for(self, path: str) -> tuple[RuleSelection, bool]:
        settings = self.resolver.for_path(Path(path))
        return settings.selection_for(Path(path)), settings.unsafe_fixes

    def lint_document(self, uri: str) -> DocumentState | None:
        document = self.workspace.get_text_document(uri)
        text, version = document.source, document.version
        path = to_fs_path(uri) or uri
        try:
            selection, unsafe = self.settings_for(path)
        except SettingsError as error:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"dslint: {error}"))
            return None
        result = lint_source(path, text.encode("utf-8"), selection)
        return DocumentState(version, text, path, selection, unsafe, result.diagnostics)

    def publish(self, uri: str, state: DocumentState) -> None:
        lines = _lines(state.text)
        published = [self.to_lsp(d, index, lines) for index, d in enumerate(state.diagnostics)]
        self.states[uri] = state
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=published, version=state.version)
        )

    @staticmethod
    def to_lsp(diagnostic: Diagnostic, index: int, lines: list[str]) -> types.Diagnostic:
        docs = os.environ.get("DSLINT_DOCS_URL")
        return types.Diagnostic(
            range=to_range(lines, diagnostic.start, diagnostic.end),
            message=diagnostic.message,
            severity=SEVERITIES[diagnostic.severity],
            code=diagnostic.code,
            code_description=types.CodeDescription(href=f"{docs.split('#')[0]}#rules") if docs else None,
            source=SOURCE,
            data={"index": index, "code": diagnostic.code, "fixable": diagnostic.fix is not None},
        )

    async def schedule(self, uri: str) -> None:
        """Lint `uri` off the event loop; edits that arrive meanwhile are linted once, with the newest text."""
        self.wanted[uri] = self.workspace.get_text_document(uri).version
        if uri in self.running:
            return
        self.running.add(uri)
        try:
            loop = asyncio.get_running_loop()
            while True:
                version = self.wanted.get(uri)
                state = await loop.run_in_executor(None, self.lint_document, uri)
                if uri not in self.wanted:
                    return  # closed meanwhile
                if state is not None and state.version == self.wanted.get(uri):
                    self.publish(uri, state)
                if self.wanted.get(uri) == version:
                    return
        finally:
            self.running.discard(uri)

    def close(self, uri: str) -> None:
        self.wanted.pop(uri, None)
        self.states.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # -- code actions ----------------------------------------------------------------------------------------

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        state = self.states.get(uri)
        if state is None:
            return []
        document = self.workspace.get_text_document(uri)
        if document.source != state.text:
            return []  # stale findings: the next publish brings fresh ones
        only = params.context.only
        wants_quickfix = not only or any(types.CodeActionKind.QuickFix.startswith(k) for k in only)
        wants_fix_all = not only or any(FIX_ALL_KIND.startswith(k) for k in only)
        lines = _lines(state.text)
        actions: list[types.CodeAction] = []
        if wants_quickfix:
            for reported in params.context.diagnostics:
                finding = self._finding(state, reported)
                if finding is None or finding.fix is None:
                    continue
                fix = finding.fix
                label = fix.message or f"Fix {finding.code}"
                title = f"{label} ({finding.code})" if fix.is_safe else f"{label} ({finding.code}, unsafe)"
                actions.append(
                    types.CodeAction(
                        title=title,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[reported],
                        is_preferred=fix.is_safe,
                        edit=self._workspace_edit(uri, state.version, [self._text_edit(e, lines) for e in fix.edits]),
                    )
                )
        if wants_fix_all and any(d.fix is not None and d.fix.is_safe for d in state.diagnostics):
            outcome = fix_text(
                state.text,
                lambda text: lint_source(state.path, text.encode("utf-8"), state.selection).diagnostics,
                unsafe=False,
            )
            if outcome.changed:
                whole = types.Range(start=types.Position(line=0, character=0), end=_end_of(state.text, lines))
                actions.append(
                    types.CodeAction(
                        title="dslint: fix all safe fixes",
                        kind=FIX_ALL_KIND,
                        edit=self._workspace_edit(uri, state.version, [types.TextEdit(whole, outcome.text)]),
                    )
                )
        return actions

    @staticmethod
    def _finding(state: DocumentState, reported: types.Diagnostic) -> Diagnostic | None:
        if reported.source != SOURCE or not isinstance(reported.data, dict):
            return None
        index = reported.data.get("index")
        if not isinstance(index, int) or not 0 <= index < len(state.diagnostics):
            return None
        finding = state.diagnostics[index]
        return finding if finding.code == reported.data.get("code") else None

    @staticmethod
    def _text_edit(edit: Edit, lines: list[str]) -> types.TextEdit:
        return types.TextEdit(range=to_range(lines, edit.start, edit.end), new_text=edit.content)

    @staticmethod
    def _workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                    edits=list(edits),
                )
            ]
        )


def create_server() -> DslintServer:
    server = DslintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: DslintServer, params: types.DidOpenTextDocumentParams) -> None:
        await ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: DslintServer, params: types.DidChangeTextDocumentParams) -> None:
        await ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: DslintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.resolver = SettingsResolver()  # a saved pyproject.toml may have changed the settings
        await ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DslintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False
        ),
    )
    def code_action(ls: DslintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    return server


def main() -> None:
    create_server().start_io()
