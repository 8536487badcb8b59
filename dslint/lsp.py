"""`dslint lsp`: a language server (pygls 2) over stdio.

It publishes diagnostics when a Python document or a DeepSpeed config (JSON, HJSON) is opened, changed or saved
(the same linter, settings and noqa handling as `dslint check`), and publishes the findings a script's lint
places in the config file it points at for that config's URI (`dslint.lsp_configs`). It offers a quick fix
(code action) for each finding that has a fix, and a "fix all safe fixes" source action (`source.fixAll.dslint`)
that applies them through the fixer's verified rounds. Linting runs off the event loop; a result is only
published while its document version is current, and rapid edits coalesce into one run with the newest text.

LSP positions are 0-based lines and code units of the negotiated `positionEncoding` (utf-8, utf-16 or utf-32);
dslint's are 1-based lines and 1-based code points: `dslint.lsp_positions` converts every position both ways, and
the server keeps its own copy of each open document, updated with those conversions.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from dslint import __version__
from dslint.diagnostics import Diagnostic, Edit, Severity
from dslint.fix.edits import fix_text, import_edits
from dslint.framework.rule_pages import rule_url
from dslint.limits import DEFAULT_MAX_CONFIG_SIZE, TooLarge, format_size, read_capped
from dslint.lint.file import lint_text, own_findings
from dslint.lint.incremental import Snapshot, first_lint, relint
from dslint.lint.result import one_per_place
from dslint.lsp_actions import (
    can_refresh,
    disable_for_line,
    editor_resolver,
    full_report,
    hover,
    wants_pull,
    workspace_edit,
)
from dslint.lsp_configs import LinkedFindings, document_kind, lint_document, normalised
from dslint.lsp_io import exit_now, start_io, watch_parent
from dslint.lsp_positions import OwnDocumentsProtocol, PositionCodec, lsp_lines
from dslint.lsp_project import document_project
from dslint.selection import RuleSelection
from dslint.settings import SettingsError, SettingsResolver

SOURCE = "dslint"
FIX_ALL_KIND = "source.fixAll.dslint"
SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


@dataclass
class DocumentState:
    """The findings last published for one document, kept to answer code actions."""

    version: int | None
    text: str
    path: str
    selection: RuleSelection
    unsafe_fixes: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)  # the document's own findings
    kind: str = "script"  # or "config" (dslint.lsp_configs.document_kind)
    shown: list[Diagnostic] = field(default_factory=list)  # as published: own, then other scripts' in this file
    skipped: str | None = None  # over its size limit: not linted, and this says so ("2.3 MB over ...")


FIRST_ANSWER_LINES = 500  # an opened script this long gets a first answer before its full lint


class DslintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "dslint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=OwnDocumentsProtocol,
        )
        self.resolver = SettingsResolver()
        self.editor_options: object = None  # `initializationOptions`: settings from the editor (lsp_actions)
        self.option_problems: list[str] = []
        self.states: dict[str, DocumentState] = {}  # what was last published, for code actions
        self.snapshots: dict[str, Snapshot] = {}  # the last full lint, the base of fast re-lints
        self.wanted: dict[str, int | None] = {}  # uri -> newest version seen
        self.full_running: set[str] = set()
        self.fast_running: set[str] = set()
        self.full_published: dict[str, int | None] = {}
        self._pool: ProcessPoolExecutor | None = None
        self.documents: dict[str, tuple[int | None, str, str | None]] = {}  # uri -> version, text, language
        self.linked = LinkedFindings()  # what scripts' lints found in the config files they point at
        self.generation = 0  # bumped at every save: the worker builds its project index again (lsp_project)

    @property
    def codec(self) -> PositionCodec:
        """Positions in the encoding negotiated at `initialize` (the one the capabilities announced)."""
        return PositionCodec.negotiated(self.workspace.position_encoding)

    def opened(self, document: types.TextDocumentItem) -> None:
        self.documents[document.uri] = (document.version, document.text, document.language_id)

    def changed(self, params: types.DidChangeTextDocumentParams) -> None:
        """Apply the changes to this server's copy (pygls's copy splits lines at form feeds and U+2028 too)."""
        uri = params.text_document.uri
        if uri not in self.documents:
            return
        _, text, language = self.documents[uri]
        for change in params.content_changes:
            text = self.codec.apply_change(text, change)
        self.documents[uri] = (params.text_document.version, text, language)
        item = types.TextDocumentItem(uri, language or "", params.text_document.version, text)
        self.workspace.put_text_document(item)

    @property
    def pool(self) -> ProcessPoolExecutor:
        """Full lints run in a worker process, so they never hold this process's GIL against fast re-lints."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=get_context("spawn"), initializer=watch_parent, initargs=(os.getpid(),)
            )
        return self._pool

    def stop_workers(self) -> None:
        """End the worker process now, whatever it is linting (at `exit`)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()

    # -- linting ---------------------------------------------------------------------------------------------

    def settings_for(self, path: str) -> tuple[RuleSelection, bool]:
        settings = self.resolver.for_path(Path(path))
        return settings.selection_for(Path(path)), settings.unsafe_fixes

    def over_limit(self, path: str, text: str, kind: str) -> str | None:
        """Why a document is not linted: its size over `max-file-size` (a script) or `max-config-size`, as
        `dslint check` skips such a file; None when it is not."""
        limits = self.resolver.for_path(Path(path)).limits
        limit, setting = (
            (limits.max_file_size, "max-file-size") if kind == "script" else (limits.max_config_size, "max-config-size")
        )
        if len(text) <= limit // 4:  # at most 4 bytes a character: surely under, without encoding it
            return None
        size = len(text.encode("utf-8", errors="surrogatepass"))
        return f"{format_size(size)} over {setting} ({format_size(limit)})" if size > limit else None

    def document_state(self, uri: str) -> DocumentState | None:
        """The document's current text and settings, with no findings yet."""
        if uri not in self.documents:
            return None
        version, text, language = self.documents[uri]
        path = to_fs_path(uri) or uri
        kind = document_kind(path, language)
        if kind is None:
            return None  # dslint checks Python scripts and DeepSpeed configs only
        try:
            selection, unsafe = self.settings_for(path)
            skipped = self.over_limit(path, text, kind)
        except SettingsError as error:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"dslint: {error}"))
            return None
        return DocumentState(version, text, path, selection, unsafe, kind=kind, skipped=skipped)

    def fast_lint(self, state: DocumentState, base: Snapshot | None) -> DocumentState | None:
        """A fast re-lint of what an edit touched (`relint`), or for a document just opened (no `base`), a first
        answer from the statements that carry context (`first_lint`); the full lint follows either way."""
        gc.freeze()  # what is alive now (modules, documents, the base) is not scanned by the collections to come
        started, cpu = time.perf_counter(), time.thread_time()
        if base is None:
            found = first_lint(state.text, state.path, state.selection)
        else:
            found = relint(base, state.text, state.path, state.selection)
        elapsed, cpu = 1000 * (time.perf_counter() - started), 1000 * (time.thread_time() - cpu)
        outcome = "none" if found is None else f"{len(found)} findings"
        name = Path(state.path).name
        what = "first answer" if base is None else "fast re-lint"
        message = f"dslint: {what} of {name} v{state.version} {elapsed:.0f} ms, cpu {cpu:.0f} ms ({outcome})"
        self.window_log_message(types.LogMessageParams(types.MessageType.Log, message))
        if found is None:
            return None
        state.diagnostics = found
        return state

    async def fast_loop(self, uri: str, state: DocumentState, base: Snapshot | None) -> None:
        """One fast re-lint at a time per document, then one of the newest text if edits came meanwhile: many
        edits in a row (a client that sends the whole text at each keystroke) cost a lint of the newest text,
        not one each, queued."""
        self.fast_running.add(uri)
        try:
            while True:
                fast = await asyncio.get_running_loop().run_in_executor(None, self.fast_lint, state, base)
                current = self.wanted.get(uri) == state.version and self.full_published.get(uri) != state.version
                if fast is not None and current:
                    self.publish(uri, fast)
                if uri not in self.wanted or self.wanted[uri] == state.version:
                    return
                newest = self.document_state(uri)
                if newest is None or newest.skipped is not None:
                    return
                state, base = newest, self.snapshots.get(uri) if newest.kind == "script" else None
                if base is None:
                    return  # the full lint gives the first answer
        finally:
            self.fast_running.discard(uri)

    def items(self, state: DocumentState) -> list[types.Diagnostic]:
        """The document's findings as LSP diagnostics: its own, then those open scripts found in it; for a
        document over its size limit, one diagnostic that says it was not checked."""
        if state.skipped is not None:
            state.shown = []
            start = types.Position(line=0, character=0)
            return [
                types.Diagnostic(
                    range=types.Range(start=start, end=start),
                    message=f"dslint: not checked: {state.skipped}",
                    severity=types.DiagnosticSeverity.Warning,
                    source=SOURCE,
                )
            ]
        lines = lsp_lines(state.text)
        state.shown = one_per_place(state.diagnostics, self.linked_findings(state.path, state.text))
        return [self.to_lsp(d, index, lines, self.codec) for index, d in enumerate(state.shown)]

    def pulls(self, uri: str) -> bool:
        """Whether the client asks for this document's findings (`textDocument/diagnostic`) instead."""
        return uri in self.documents and wants_pull(self.client_capabilities)

    def publish(self, uri: str, state: DocumentState) -> None:
        published = self.items(state)
        self.states[uri] = state
        if self.pulls(uri):
            if can_refresh(self.client_capabilities):
                self.workspace_diagnostic_refresh(None)  # the client pulls again
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=published, version=state.version)
        )

    def linked_findings(self, path: str, text: str | None) -> list[Diagnostic]:
        """What open scripts' lints found in the config at `path`; they were read from disk, so none while the
        editor holds a different text (saving it re-lints the scripts)."""
        found = self.linked.for_config(path)
        if found and text is not None:
            try:
                on_disk = read_capped(path, DEFAULT_MAX_CONFIG_SIZE, "max-config-size").decode("utf-8-sig")
            except (OSError, TooLarge, UnicodeDecodeError):
                return []
            if on_disk.replace("\r\n", "\n") != text.replace("\r\n", "\n"):
                return []
        return found

    def publish_config(self, path: str) -> None:
        """Publish again the findings in the config at `path`: its open document's, or only the linked ones."""
        for uri, state in list(self.states.items()):
            if normalised(state.path) == normalised(path):
                self.publish(uri, state)
                return
        lines = lsp_lines(self._disk_text(path))
        found = self.linked_findings(path, None)
        published = [self.to_lsp(d, index, lines, self.codec) for index, d in enumerate(found)]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=from_fs_path(path) or Path(path).as_uri(), diagnostics=published)
        )

    @staticmethod
    def _disk_text(path: str) -> str:
        try:
            return read_capped(path, DEFAULT_MAX_CONFIG_SIZE, "max-config-size").decode("utf-8-sig")
        except (OSError, TooLarge, UnicodeDecodeError):
            return ""

    @staticmethod
    def to_lsp(diagnostic: Diagnostic, index: int, lines: list[str], codec: PositionCodec) -> types.Diagnostic:
        docs = rule_url(diagnostic.code)
        return types.Diagnostic(
            range=codec.to_range(lines, diagnostic.start, diagnostic.end),
            message=diagnostic.message,
            severity=SEVERITIES[diagnostic.severity],
            code=diagnostic.code,
            code_description=types.CodeDescription(href=docs) if docs else None,
            source=SOURCE,
            data={"index": index, "code": diagnostic.code, "fixable": diagnostic.fix is not None},
        )

    async def pull(self, uri: str) -> types.RelatedFullDocumentDiagnosticReport:
        """`textDocument/diagnostic`: the findings of the document's current text (a full lint when the last one
        was of another version)."""
        state = self.states.get(uri)
        current = self.documents.get(uri)
        if current is None:
            return full_report([], None)
        if state is not None and state.version == current[0] and state.text == current[1]:
            return full_report(self.items(state), state.version)
        fresh = self.document_state(uri)
        if fresh is None:
            return full_report([], current[0])
        if fresh.skipped is not None:
            self.states[uri] = fresh
            return full_report(self.items(fresh), fresh.version)
        known = fresh.kind == "config" and self.linked.is_linked(fresh.path)
        snapshot, linked = await asyncio.get_running_loop().run_in_executor(
            self.pool, full_lint, fresh.path, fresh.text, fresh.selection, fresh.kind, known, self.generation
        )
        fresh.diagnostics = list(snapshot.diagnostics)
        if fresh.kind == "script":
            self.snapshots[uri] = snapshot
            for config in sorted(self.linked.replace(uri, linked)):
                self.publish_config(config)
        items = self.items(fresh)
        self.states[uri] = fresh
        return full_report(items, fresh.version)

    async def schedule(self, uri: str) -> None:
        """On open or change: publish a fast re-lint of what the edit touched at once (when a full lint of an
        earlier version exists), and keep one full lint running in the worker process for the newest text."""
        state = self.document_state(uri)
        if state is None:
            return
        self.wanted[uri] = state.version
        if state.skipped is not None:  # over its size limit: said so at once, never parsed
            self.wanted.pop(uri, None)
            self.snapshots.pop(uri, None)
            self.publish(uri, state)
            return
        base = self.snapshots.get(uri) if state.kind == "script" else None
        # nothing published yet for this long document (just opened): a first answer before the full lint. It
        # reads the file alone (the project index is built in the full lint's worker), so a short file, whose
        # full lint is quick, waits for the full answer instead.
        first = (
            state.kind == "script"
            and base is None
            and not self.pulls(uri)
            and uri not in self.states
            and state.text.count("\n") >= FIRST_ANSWER_LINES
        )
        if (base is not None or first) and uri in self.fast_running:
            return  # the fast re-lint running goes on with this newest text when it ends (`fast_loop`)
        if base is not None or first:
            # the fast re-lint (or, on open, the first answer) goes first; the full lint starts after it, so the
            # two do not share the CPU
            await self.fast_loop(uri, state, base)
        if uri not in self.full_running and uri in self.wanted:
            self.full_running.add(uri)
            asyncio.get_running_loop().create_task(self.full_loop(uri))

    async def full_loop(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while uri in self.wanted:
                state = self.document_state(uri)
                if state is None or state.skipped is not None:
                    return
                started = time.perf_counter()
                known = state.kind == "config" and self.linked.is_linked(state.path)
                snapshot, linked = await loop.run_in_executor(
                    self.pool,
                    full_lint,
                    state.path,
                    state.text,
                    state.selection,
                    state.kind,
                    known,
                    self.generation,
                )
                found = list(snapshot.diagnostics)
                if state.kind == "script":
                    self.snapshots[uri] = snapshot
                if uri not in self.wanted:
                    return
                if self.wanted[uri] != state.version:
                    continue  # edited meanwhile: lint the newest text
                for config in sorted(self.linked.replace(uri, linked)):
                    self.publish_config(config)
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
        self.documents.pop(uri, None)
        self.wanted.pop(uri, None)
        state = self.states.pop(uri, None)
        self.snapshots.pop(uri, None)
        self.full_published.pop(uri, None)
        for config in sorted(self.linked.forget(uri)):
            self.publish_config(config)
        if state is not None and self.linked.for_config(state.path):
            self.publish_config(state.path)  # what open scripts found in it stays shown
        else:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def saved(self, uri: str) -> None:
        """A saved file changes what the project index knows (an engine passed to another module's helper, a
        config a launcher names) and what the scripts pointing at a config find there: lint every open document
        again, the saved one first."""
        await self.schedule(uri)
        for other in list(self.documents):
            if other != uri:
                await self.schedule(other)

    # -- code actions ----------------------------------------------------------------------------------------

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        state = self.states.get(uri)
        if state is None:
            return []
        if uri not in self.documents or self.documents[uri][1] != state.text:
            return []  # stale findings: the next publish brings fresh ones
        only = params.context.only
        wants_quickfix = not only or any(types.CodeActionKind.QuickFix.startswith(k) for k in only)
        wants_fix_all = not only or any(FIX_ALL_KIND.startswith(k) for k in only)
        lines = lsp_lines(state.text)
        codec = self.codec
        actions: list[types.CodeAction] = []
        if wants_quickfix:
            for reported in params.context.diagnostics:
                finding = self._finding(state, reported)
                if finding is None:
                    continue
                if finding.fix is not None:
                    actions.append(self._quick_fix(uri, state, finding, reported, lines, codec))
                disable = disable_for_line(state.text, finding, codec) if state.kind == "script" else None
                if disable is not None and finding.path == state.path:
                    actions.append(
                        types.CodeAction(
                            title=f"Disable {finding.code} for this line (# noqa)",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[reported],
                            edit=workspace_edit(uri, state.version, [disable]),
                        )
                    )
        if wants_fix_all and any(d.fix is not None and d.fix.is_safe for d in state.diagnostics):
            outcome = fix_text(
                state.text,
                lambda text: own_findings(state.path, lint_text(state.path, text, state.selection)),
                unsafe=False,
            )
            if outcome.changed:
                whole = types.Range(start=types.Position(line=0, character=0), end=codec.end_of(state.text))
                actions.append(
                    types.CodeAction(
                        title="dslint: fix all safe fixes",
                        kind=FIX_ALL_KIND,
                        edit=workspace_edit(uri, state.version, [types.TextEdit(whole, outcome.text)]),
                    )
                )
        return actions

    def _quick_fix(
        self,
        uri: str,
        state: DocumentState,
        finding: Diagnostic,
        reported: types.Diagnostic,
        lines: list[str],
        codec: PositionCodec,
    ) -> types.CodeAction:
        fix = finding.fix
        assert fix is not None
        needed = [*fix.edits, *import_edits(state.text, fix.imports)]  # as `dslint fix` adds them
        edits = [self._text_edit(e, lines, codec) for e in needed]
        label = fix.message or f"Fix {finding.code}"
        title = f"{label} ({finding.code})" if fix.is_safe else f"{label} ({finding.code}, unsafe)"
        return types.CodeAction(
            title=title,
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[reported],
            is_preferred=fix.is_safe,
            edit=workspace_edit(uri, state.version, edits),
        )

    @staticmethod
    def _finding(state: DocumentState, reported: types.Diagnostic) -> Diagnostic | None:
        if reported.source != SOURCE or not isinstance(reported.data, dict):
            return None
        index = reported.data.get("index")
        if not isinstance(index, int) or not 0 <= index < len(state.shown):
            return None
        finding = state.shown[index]
        return finding if finding.code == reported.data.get("code") else None

    @staticmethod
    def _text_edit(edit: Edit, lines: list[str], codec: PositionCodec) -> types.TextEdit:
        return types.TextEdit(range=codec.to_range(lines, edit.start, edit.end), new_text=edit.content)


def full_lint(
    path: str,
    text: str,
    selection: RuleSelection,
    kind: str = "script",
    known_config: bool = False,
    generation: int = 0,
) -> tuple[Snapshot, dict[str, tuple[Diagnostic, ...]]]:
    """A full lint (run in the worker process): the document's findings (with a script's top-level statements,
    for fast re-lints), and the findings it placed in the config files it points at. The project index of the
    document's project as of `generation` says what is known about it from elsewhere, as in `dslint check`."""
    project = document_project(path, text.encode("utf-8"), generation)
    outcome = lint_document(path, text, kind, selection, known_config, project.facts, project.config_reading)
    if kind != "script":
        return Snapshot(text, outcome.own), outcome.linked
    return Snapshot.of(text, outcome.own), outcome.linked


def create_server() -> DslintServer:
    server = DslintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: DslintServer, params: types.InitializeParams) -> None:
        ls.editor_options = params.initialization_options  # settings from the editor (lsp_actions)
        ls.resolver, ls.option_problems = editor_resolver(ls.editor_options)

    @server.feature(types.INITIALIZED)
    def initialized(ls: DslintServer, params: types.InitializedParams) -> None:
        for problem in ls.option_problems:
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"dslint: {problem}"))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: DslintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.opened(params.text_document)
        await ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: DslintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.changed(params)
        await ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: DslintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.resolver, _ = editor_resolver(ls.editor_options)  # a saved pyproject.toml may have changed the settings
        ls.generation += 1  # a saved file may change what the project index knows about any document
        await ls.saved(params.text_document.uri)

    @server.feature(types.EXIT)
    def on_exit(ls: DslintServer, params: None) -> None:
        ls.stop_workers()
        exit_now(ls, ls.protocol._shutdown)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DslintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(inter_file_dependencies=True, workspace_diagnostics=False, identifier="dslint"),
    )
    async def diagnostic(
        ls: DslintServer, params: types.DocumentDiagnosticParams
    ) -> types.RelatedFullDocumentDiagnosticReport:
        return await ls.pull(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False
        ),
    )
    def code_action(ls: DslintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: DslintServer, params: types.HoverParams) -> types.Hover | None:
        state = ls.states.get(params.text_document.uri)
        return hover(state.shown, state.text, params.position, ls.codec) if state is not None else None

    return server


def main() -> None:
    start_io(create_server())
