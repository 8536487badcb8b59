"""Parsing a script so that no file can take the run down.

libcst's native parser crashes the whole process (SIGSEGV, a native stack overflow) on some inputs, and dslint's
own traversal of libcst's tree is recursive Python. So before libcst sees a file:

1. CPython compiles it to an AST (`compile(..., PyCF_ONLY_AST)`, warnings suppressed). A file CPython refuses
   (a syntax error, an unknown encoding cookie, a null byte, "too many nested parentheses", recursion or memory
   exhausted while compiling) is reported with CPython's own message and never reaches libcst.
2. The depth of that AST is measured without recursion, counting each operator of an `and`/`or` chain as a level
   (libcst nests them two by two). Deeper than `max-nesting`: reported as too deeply nested, not parsed.
3. libcst parses in a thread with a large stack (`PARSER_STACK`), so a file just under the limit has room to
   spare; a failure there is an exception of the caller's, never a crash.

A worker process that dies anyway is reported as that file's error by `dslint.lint.batch`.
"""

from __future__ import annotations

import ast
import io
import os
import queue
import re
import sys
import threading
import tokenize
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dslint.model.library import ONE_RANK_FIRST, ONE_RANK_PREDICATES
from dslint.model.summary import module_imports, walk

if TYPE_CHECKING:
    import libcst as cst

PARSER_STACK = 256 * 1024 * 1024  # bytes of stack for the parsing thread (virtual memory: touched only as used)


@dataclass(frozen=True)
class Refusal:
    """Why a script is not handed to libcst: `too_deep` (CPython accepts it; libcst or dslint would not) or
    CPython's own refusal, with its position."""

    message: str
    line: int = 1
    column: int = 1
    too_deep: bool = False


def refusal(path: str, data: bytes, max_nesting: int) -> Refusal | None:
    """None when `data` is safe to parse with libcst; otherwise why not."""
    return checked(path, data, max_nesting)[0]


def checked(path: str, data: bytes, max_nesting: int) -> tuple[Refusal | None, ast.Module | None]:
    """(`refusal`, CPython's AST of `data` when it compiled and is not too deep)."""
    refused, tree = compiled(path, data)
    if refused is None and tree is not None:
        refused = too_deep(tree, data, max_nesting)
    return refused, tree if refused is None else None


def compiled(path: str, data: bytes) -> tuple[Refusal | None, ast.Module | None]:
    """(why CPython refuses `data`, or None; its AST when it compiles). Deep nesting is `too_deep`'s question."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning/DeprecationWarning (invalid escapes) are not errors
            tree = compile(data, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:  # also IndentationError, TabError, an unknown encoding cookie
        return Refusal(error.msg or str(error), max(error.lineno or 1, 1), max(error.offset or 1, 1)), None
    except (ValueError, UnicodeDecodeError) as error:  # a null byte; bytes that do not decode
        return Refusal(str(error)), None
    except RecursionError:
        return Refusal("CPython cannot compile it: nested too deeply (maximum recursion depth exceeded)"), None
    except MemoryError:
        return Refusal("CPython cannot compile it: out of memory (nested too deeply?)"), None
    return None, tree if isinstance(tree, ast.Module) else None


# an f-string's opening quote (`f"`, `rf'`, `F"""`): where Python 3.12's grammar (PEP 701) differs from older ones
_FSTRING_START = re.compile(rb"(?<![\w'\"])(?:[fF][rR]?|[rR][fF])['\"]")


def newer_python_syntax(data: bytes, refused: Refusal) -> bool:
    """CPython before 3.12 refuses f-strings that reuse their quotes or hold a backslash inside (PEP 701), valid
    from 3.12: a file whose refused line holds an f-string and that libcst (which reads 3.12's grammar) parses is
    valid Python, to be read with libcst alone, not a syntax error."""
    if sys.version_info >= (3, 12) or refused.too_deep or len(data) > 2_000_000:
        return False
    lines = data.splitlines()
    if not 1 <= refused.line <= len(lines) or _FSTRING_START.search(lines[refused.line - 1]) is None:
        return False
    if _bracket_depth(data) > _NEWER_SYNTAX_DEPTH:  # no tree to measure: libcst is not handed deep nesting
        return False
    import libcst as cst  # only here and for the files some rule parses: a run that parses none never imports it

    try:
        cst.parse_module(data)
    except (cst.ParserSyntaxError, ValueError, UnicodeDecodeError, SyntaxError, RecursionError):
        return False
    return True


_NEWER_SYNTAX_DEPTH = 40
_BRACKETS = re.compile(rb"[\[\](){}]")


def _bracket_depth(data: bytes) -> int:
    """The deepest bracket nesting of the bytes, strings and comments counted too (an upper bound's stand-in)."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(data):
        depth = depth + 1 if match.group() in b"([{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def too_deep(tree: ast.AST, data: bytes, max_nesting: int) -> Refusal | None:
    """Why libcst must not parse a file CPython compiled: its tree is deeper than `max_nesting`; else None."""
    depth, line = tree_depth(tree, data)
    if depth > max_nesting:
        message = f"too deeply nested for dslint's parser (depth {depth} at line {line}; max-nesting is {max_nesting})"
        return Refusal(message, line, 1, too_deep=True)
    return None


INITIALIZE = "deepspeed.initialize"
INIT_INFERENCE = "deepspeed.init_inference"


@dataclass(frozen=True)
class CodeFacts:
    """What CPython's tree says before libcst is asked: whether a call can be `deepspeed.initialize`, and the
    code's words (names, attributes, keywords, imports, string constants other than lone string statements such
    as docstrings; never comments) for the rules' token test."""

    calls_initialize: bool
    words: bytes
    calls_inference: bool = False  # a call that can be `deepspeed.init_inference`
    methods: frozenset[str] = frozenset()  # m of every call `X.m(...)`
    calls: frozenset[str] = frozenset()  # every call's callee resolved through the imports (`torch.save`)
    one_rank_methods: frozenset[str] = frozenset()  # m of the calls `X.m(...)` in a block that may run on one rank
    # every call's keyword names (`deepspeed=`), and a dict display's identifier keys (`{"deepspeed": path}`)
    keywords: frozenset[str] = frozenset()
    stored: frozenset[str] = frozenset()  # the attributes assigned to (`args.deepspeed = ...`: `deepspeed`)
    stored_keys: frozenset[str] = frozenset()  # the string keys assigned to (`os.environ["RANK"] = ...`: `RANK`)
    # a `parse_json_file`/`parse_yaml_file` call whose path may be written in the script (a string in it, or a
    # name): training arguments from a file `project.arguments_files` can follow (not `sys.argv[1]`)
    arguments_file: bool = False


def code_facts(tree: ast.Module, star_imports: Mapping[str, str] | None = None) -> CodeFacts:
    """One walk of `tree`. A call resolves through the file's imports exactly as the script facts resolve it: both
    read them with `dslint.model.summary.module_imports`, so no call the facts would see is missed. Cheaper than libcst
    by far: a file whose only reason to be parsed was text in a docstring, a comment or a message
    (`deepspeed.initialize()` in DeepSpeed's own source, `from_pretrained` in a model's docs) is settled here.
    `star_imports`: the names the project index says reach the module only through `from m import *`."""
    functions: list[ast.expr] = []
    words: list[str] = []
    lone_strings: set[int] = set()
    blocks: list[ast.AST] = []
    keywords: set[str] = set()
    stored: set[str] = set()
    stored_keys: set[str] = set()
    parsers: list[ast.Call] = []
    word, AST = words.append, ast.AST
    stack: list[Any] = [tree]  # nodes of every kind, told apart by type below (no narrowing for mypy)
    pop, push = stack.pop, stack.append
    # One loop, each node before its children (as `_nodes`), told apart by its exact type (CPython's parser makes
    # no subclasses); the load/store contexts, a leaf under every name, are never pushed.
    while stack:
        node = pop()
        kind = type(node)
        if kind is ast.Name:
            word(node.id)
            continue  # its one child is its context, never pushed
        if kind is ast.Constant:
            if type(node.value) is str and id(node) not in lone_strings:
                word(node.value)
            elif type(node.value) is bytes:
                word(node.value.decode("latin-1"))
            continue  # no child
        if kind not in _READ_KINDS:
            pass  # most nodes (an assignment, an operator, a comparison...): only their children are read
        elif kind is ast.Attribute:
            word(node.attr)
            if type(node.ctx) is ast.Store:
                stored.add(node.attr)
        elif kind is ast.Call:
            functions.append(node.func)
            if type(node.func) is ast.Attribute and node.func.attr in _ARGUMENTS_PARSERS:
                parsers.append(node)
        elif kind is ast.Subscript:
            key = node.slice
            if type(node.ctx) is ast.Store and type(key) is ast.Constant and type(key.value) is str:
                stored_keys.add(key.value)
        elif kind is ast.Expr:
            if type(node.value) is ast.Constant:
                lone_strings.add(id(node.value))
        elif kind is ast.keyword:
            if node.arg:
                word(node.arg)
                keywords.add(node.arg)
            else:
                word("**")  # a dict splatted into the call (`SFTConfig(**settings)`), as the text shows it
        elif kind is ast.Dict:
            # a dict display's string keys may reach a call as keywords (`TrainingArguments(**settings)`)
            for key in node.keys:
                if type(key) is ast.Constant and type(key.value) is str and key.value.isidentifier():
                    keywords.add(key.value)
        elif kind is ast.arg:
            word(node.arg)
        elif kind in _DEFINITIONS:
            word(node.name)
            if kind is not ast.ClassDef and node.decorator_list:
                blocks.append(node)  # a decorator may run it on one rank (`@rank_zero_only`)
        elif kind is ast.Import:
            for alias in node.names:
                words.extend((alias.name, alias.asname or ""))
        elif kind is ast.ImportFrom:
            word(node.module or "")
            for alias in node.names:
                words.extend((alias.name, alias.asname or ""))
        elif kind is ast.Global or kind is ast.Nonlocal:
            words.extend(node.names)
        elif kind in _MATCH_NAMES:
            if node.name:
                word(node.name)
        elif kind in _BLOCKS:
            blocks.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, AST):
                if type(value) not in _CONTEXTS:
                    push(value)
            elif type(value) is list:
                for item in value:
                    if isinstance(item, AST):
                        push(item)
    text = "\n".join(words).encode("utf-8", "surrogatepass")
    imports, _ = module_imports(tree, None)
    if star_imports:
        imports = {**star_imports, **imports}
    callees = _callees(functions, imports)
    return CodeFacts(
        INITIALIZE in callees,
        text,
        INIT_INFERENCE in callees,
        frozenset(f.attr for f in functions if isinstance(f, ast.Attribute)),
        frozenset(callees),
        _one_rank_methods(blocks, functions),
        frozenset(keywords),
        frozenset(stored),
        frozenset(stored_keys),
        any(_may_name_a_file(call) for call in parsers),
    )


# HfArgumentParser's readers of an arguments file, by the keyword of the path (`project/arguments_files.py`)
_ARGUMENTS_PARSERS = {"parse_json_file": "json_file", "parse_yaml_file": "yaml_file"}


def _may_name_a_file(call: ast.Call) -> bool:
    """Whether the path a `parse_json_file(...)` call reads may be written in the script: a string in the argument
    (`"args.json"`, `os.path.abspath("args.json")`) or a name (bound to one elsewhere); not `sys.argv[1]`."""
    assert isinstance(call.func, ast.Attribute)
    keyword = _ARGUMENTS_PARSERS[call.func.attr]
    argument = next((k.value for k in call.keywords if k.arg == keyword), call.args[0] if call.args else None)
    if argument is None:
        return any(k.arg is None for k in call.keywords)  # `**kwargs`: not known
    return type(argument) is ast.Name or any(
        type(node) is ast.Constant and type(node.value) is str for node in ast.walk(argument)
    )


_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_MATCH_NAMES = frozenset({getattr(ast, "MatchAs", ast.Name), getattr(ast, "MatchStar", ast.Name)}) - {ast.Name}
_BLOCKS = frozenset({ast.If, ast.With, ast.AsyncWith})
# the types `code_facts` reads beyond their children (a name and a constant come first, on their own)
_READ_KINDS = frozenset(
    {ast.Attribute, ast.Call, ast.Subscript, ast.Expr, ast.keyword, ast.Dict, ast.arg, ast.Import, ast.ImportFrom}
    | {ast.Global, ast.Nonlocal, *_DEFINITIONS, *_MATCH_NAMES, *_BLOCKS}
)
_CONTEXTS = frozenset({ast.Load, ast.Store, ast.Del})


def _callees(functions: list[ast.expr], imports: dict[str, str]) -> set[str]:
    """The dotted names the calls' callees resolve to through the imports (`deepspeed.initialize`)."""
    found: set[str] = set()
    for function in functions:
        parts: list[str] = []
        while isinstance(function, ast.Attribute):
            parts.append(function.attr)
            function = function.value
        if not isinstance(function, ast.Name):
            continue
        target = imports.get(function.id)
        if target is not None:
            found.add(target + "".join(f".{part}" for part in reversed(parts)))
    return found


def _one_rank_methods(blocks: list[ast.AST], functions: list[ast.expr]) -> frozenset[str]:
    """The methods called in the body of an `if` whose test names a rank, the main process or process zero (or is a
    bare name, which may hold such a test), or of a `with X.main_process_first()`, or of a decorated function:
    every block `dslint.script.one_rank` accepts, and some more (any word of the test will do, wherever it sits;
    any decorator). An `if` of that kind that ends in `continue`, `return` or `break` leaves the rest of its
    block to one rank: then every method called in the file (`functions`) may be."""
    found: set[str] = set()
    for block in blocks:
        if isinstance(block, ast.If) and _leaves_on_rank(block):
            return frozenset(f.attr for f in functions if isinstance(f, ast.Attribute))
        tests: list[ast.AST] = []
        body: list[ast.stmt]
        first = False
        if isinstance(block, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = block.body  # any decorated function: its decorator may be a project's own (`one_rank_decorators`)
        elif isinstance(block, ast.If):
            tests, body = [block.test], block.body
        elif isinstance(block, (ast.With, ast.AsyncWith)):
            tests, body, first = [item.context_expr for item in block.items], block.body, True
        else:
            continue
        named = any(_one_rank_word(word, first) for test in tests for word in _names(test))
        if tests and not named and (first or not _may_be_flag(tests[0])):
            continue
        for statement in body:
            for node in walk(statement):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    found.add(node.func.attr)
    return frozenset(found)


_EXITS = (ast.Continue, ast.Return, ast.Break)


def _leaves_on_rank(block: ast.If) -> bool:
    """`if <a test naming a rank>: ... continue` (or `return`, `break`)."""
    exits = bool(block.body) and isinstance(block.body[-1], _EXITS)
    return exits and any(_one_rank_word(word, False) for word in _names(block.test))


def _names(node: ast.AST) -> Iterator[str]:
    for child in walk(node):
        if isinstance(child, ast.Name):
            yield child.id
        elif isinstance(child, ast.Attribute):
            yield child.attr


def _may_be_flag(test: ast.AST) -> bool:
    """A bare name, or an `and` holding one: it may hold a one-rank test (`master = rank == 0` ... `if master:`)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_may_be_flag(value) for value in test.values)
    return isinstance(test, ast.Name)


def _one_rank_word(word: str, first: bool) -> bool:
    if first:
        return word.endswith(ONE_RANK_FIRST)
    return "rank" in word or word in ONE_RANK_PREDICATES


# Elements, arguments and subscripts sit one level deeper in libcst's tree than in CPython's: libcst wraps each
# in a node of its own (Element, DictElement, Arg, SubscriptElement).
_CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict)
_CONTAINER_TYPES = frozenset(_CONTAINERS)
_LONG_STRING = 200  # characters: a shorter string constant cannot hold many implicitly concatenated pieces


def tree_depth(tree: ast.AST, data: bytes = b"") -> tuple[int, int]:
    """(depth, line of the deepest node): the depth libcst's tree will have, about. An `and`/`or` chain counts
    one level per operator and implicitly concatenated strings one per piece (CPython's tree holds one node for
    either; libcst nests them two by two). Iterative: the tree may be deeper than Python's recursion limit.
    The children are read from each node's fields directly (`ast.iter_child_nodes` is a generator per node:
    this walk runs on every file libcst will parse)."""
    deepest, deepest_line = 0, 1
    lines: list[bytes] | None = None
    stack: list[tuple[Any, int]] = [(tree, 1)]  # nodes of every kind, told apart by type below
    push = stack.append
    AST, Call, Subscript, BoolOp = ast.AST, ast.Call, ast.Subscript, ast.BoolOp
    Constant, JoinedStr = ast.Constant, ast.JoinedStr
    # exact types (CPython's parser makes no subclasses): the same answers as `isinstance`, cheaper per node
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is BoolOp:
            depth += len(node.values) - 2
        elif (kind is Constant or kind is JoinedStr) and _may_be_concatenated(node):
            lines = lines if lines is not None else data.splitlines(keepends=True)
            depth += _string_pieces(lines, node) - 1
        if depth > deepest:
            deepest, deepest_line = depth, getattr(node, "lineno", deepest_line)
        # one level more for a child, two below a container, a call's arguments and a subscript's slice
        below = depth + (2 if kind in _CONTAINER_TYPES else 1)
        func = node.func if kind is Call else None
        index = node.slice if kind is Subscript else None
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, AST):
                if (func is not None and value is not func) or (index is not None and value is index):
                    push((value, depth + 2))
                else:
                    push((value, below))
            elif type(value) is list:
                for item in value:
                    if isinstance(item, AST):
                        push((item, depth + 2 if func is not None else below))
    return deepest, deepest_line


def _may_be_concatenated(node: ast.Constant | ast.JoinedStr) -> bool:
    if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
        return False
    end_line, end_column = node.end_lineno or node.lineno, node.end_col_offset or 0
    return end_line > node.lineno or end_column - node.col_offset > _LONG_STRING


def _string_pieces(lines: list[bytes], node: ast.Constant | ast.JoinedStr) -> int:
    """How many string literals the source lines of `node` hold (at least 1): an upper bound of its pieces."""
    segment = b"".join(lines[node.lineno - 1 : node.end_lineno or node.lineno])
    pieces = 0
    try:
        for token in tokenize.tokenize(io.BytesIO(segment).readline):
            if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_START", -1):
                pieces += 1
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        pass  # a segment cut inside brackets: the pieces counted so far
    return max(pieces, 1)


def parse_module(data: bytes | str) -> cst.Module:
    """`libcst.parse_module(data)` on a thread with `PARSER_STACK` bytes of stack; its exceptions are re-raised.
    The thread lives as long as its process (one per process: a forked worker starts its own), so a run that
    parses thousands of files does not pay a thread's start for each. libcst is imported on the first parse (here,
    not on the parsing thread): a run whose files are all settled on CPython's tree never imports it."""
    import libcst  # noqa: F401  (imported by the caller's thread, so the parsing thread finds it loaded)

    with _PARSER_LOCK:
        requests, replies = _parser_thread()
        requests.put(data)
        result = replies.get()
    if isinstance(result, BaseException):
        raise result
    return result


_PARSER_LOCK = threading.Lock()
_PARSER: tuple[int, threading.Thread, queue.Queue[bytes | str], queue.Queue[cst.Module | BaseException]] | None = None


def _parser_thread() -> tuple[queue.Queue[bytes | str], queue.Queue[cst.Module | BaseException]]:
    """This process's parsing thread (started on first use, and again in a forked child, which has no threads)."""
    global _PARSER
    if _PARSER is not None and _PARSER[0] == os.getpid() and _PARSER[1].is_alive():
        return _PARSER[2], _PARSER[3]
    requests: queue.Queue[bytes | str] = queue.Queue()
    replies: queue.Queue[cst.Module | BaseException] = queue.Queue()

    def serve() -> None:
        import libcst as cst

        while True:
            data = requests.get()
            try:
                replies.put(cst.parse_module(data))
            except BaseException as error:  # handed to the caller as is
                replies.put(error)

    previous = threading.stack_size(PARSER_STACK)
    try:
        thread = threading.Thread(target=serve, name="dslint-parse", daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    _PARSER = (os.getpid(), thread, requests, replies)
    return requests, replies
