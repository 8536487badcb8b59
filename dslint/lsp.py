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
import gc
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from dslint import __version__
from dslint.diagnostics import Diagnostic, Edit, Location, Severity
from dslint.fix.edits import fix_text
from dslint.lint.file import lint_text, own_findings
from dslint.lint.incremental import Snapshot, relint
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
        self.states: dict[str, DocumentState] = {}  # what was last published, for code actions
        self.snapshots: dict[str, Snapshot] = {}  # the last full lint, the base of fast re-lints
        self.wanted: dict[str, int | None] = {}  # uri -> newest version seen
        self.full_running: set[str] = set()
        self.full_published: dict[str, int | None] = {}
        self._pool: ProcessPoolExecutor | None = None

    @property
    def pool(self) -> ProcessPoolExecutor:
        """Full lints run in a worker process, so they never hold this process's GIL against fast re-lints."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"))
        return self._pool

    # -- linting ---------------------------------------------------------------------------------------------

    def settings_for(self, path: str) -> tuple[RuleSelection, bool]:
        settings = self.resolver.for_path(Path(path))
        return settings.selection_for(Path(path)), settings.unsafe_fixes

    def document_state(self, uri: str) -> DocumentState | None:
        """The document's current text and settings, with no findings yet."""
        document = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        if document.language_id not in (None, "python") and not path.endswith((".py", ".pyi")):
            return None  # dslint checks Python scripts only
        try:
            selection, unsafe = self.settings_for(path)
        except SettingsError as error:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"dslint: {error}"))
            return None
        return DocumentState(document.version, document.source, path, selection, unsafe)

    def fast_lint(self, state: DocumentState, base: Snapshot) -> DocumentState | None:
        gc.freeze()  # what is alive now (modules, documents, the base) is not scanned by the collections to come
        started, cpu = time.perf_counter(), time.thread_time()
        found = relint(base, state.text, state.path, state.selection)
        elapsed, cpu = 1000 * (time.perf_counter() - started), 1000 * (time.thread_time() - cpu)
        outcome = "none" if found is None else f"{len(found)} findings"
        name = Path(state.path).name
        message = f"dslint: fast re-lint of {name} v{state.version} {elapsed:.0f} ms, cpu {cpu:.0f} ms ({outcome})"
        self.window_log_message(types.LogMessageParams(types.MessageType.Log, message))
        if found is None:
            return None
        state.diagnostics = found
        return state

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
        """On open or change: publish a fast re-lint of what the edit touched at once (when a full lint of an
        earlier version exists), and keep one full lint running in the worker process for the newest text."""
        state = self.document_state(uri)
        if state is None:
            return
        self.wanted[uri] = state.version
        base = self.snapshots.get(uri)
        if base is not None:
            # the fast re-lint goes first; the full lint starts after it, so the two do not share the CPU
            fast = await asyncio.get_running_loop().run_in_executor(None, self.fast_lint, state, base)
            current = self.wanted.get(uri) == state.version and self.full_published.get(uri) != state.version
            if fast is not None and current:
                self.publish(uri, fast)
        if uri not in self.full_running and uri in self.wanted:
            self.full_running.add(uri)
            asyncio.get_running_loop().create_task(self.full_loop(uri))

    async def full_loop(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while uri in self.wanted:
                state = self.document_state(uri)
                if state is None:
                    return
                started = time.perf_counter()
                snapshot = await loop.run_in_executor(self.pool, full_lint, state.path, state.text, state.selection)
                found = list(snapshot.diagnostics)
                self.snapshots[uri] = snapshot
                if uri not in self.wanted:
                    return
                if self.wanted[uri] != state.version:
                    continue  # edited meanwhile: lint the newest text
                state.diagnostics = found
                previous = self.states.get(uri)
                if previous is None or previous.version != state.version or previous.diagnostics != found:
                    self.publish(uri, state)
                else:
                    self.states[uri] = state
                self.full_published[uri] = state.version
                gc.unfreeze()  # idle now: let a collection see what fast re-lints froze (see fast_lint)
                gc.collect()
                elapsed = 1000 * (time.perf_counter() - started)
                self.window_log_message(
                    types.LogMessageParams(
                        types.MessageType.Log,
                        f"dslint: full lint of {Path(state.path).name} v{state.version} {elapsed:.0f} ms",
                    )
                )
                return
        finally:
            self.full_running.discard(uri)

    def close(self, uri: str) -> None:
        self.wanted.pop(uri, None)
        self.states.pop(uri, None)
        self.snapshots.pop(uri, None)
        self.full_published.pop(uri, None)
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
                lambda text: own_findings(state.path, lint_text(state.path, text, state.selection)),
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


def full_lint(path: str, text: str, selection: RuleSelection) -> Snapshot:
    """A full lint (run in the worker process), with the top-level statements for fast re-lints."""
    return Snapshot.of(text, own_findings(path, lint_text(path, text, selection)))


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
