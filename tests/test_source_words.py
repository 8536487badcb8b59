"""The model's one-pass indexes of the sources (model/source_words.py) answer what the scan per name answered."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.model.source_words import _CLASS_BASES, _IMPORT_LINE, _PARENTHESIZED_IMPORT, SourceWords, _renamed
from dslint.model.summary import calls

SOURCES = {
    "/p/a.py": b"def build_model(x):\n    return setup(x)\n",
    "/p/b.py": b"model = my_build_model(1)\n# build_model (not a call)\n",
    "/p/c.py": b"from base import Trainer as T\nclass Mine(T):\n    pass\n",
    "/p/d.py": b"class Sub(\n    mod.Trainer,\n    Mixin,\n):\n    pass\nclass Other(X): Trainer()\n",
    "/p/e.py": b"TrainerX = 1\nclass Z(TrainerX): pass\nsetup (1)\n",
    "/p/f.py": "def \u00e9tape(x): pass\n\u00e9tape(1)\n".encode(),
}


def _calling_scan(name: str) -> list[str]:
    return [path for path, data in SOURCES.items() if name.encode() + b"(" in data]


def _class_scan(name: str) -> list[str]:
    needle = name.encode()
    statement = re.compile(rb"^[ \t]*class\s+\w+\s*\([^)]*\b" + re.escape(needle) + rb"\b", re.MULTILINE)
    renamed = re.compile(rb"\b" + re.escape(needle) + rb"\s+as\s+\w+")
    return [p for p, d in SOURCES.items() if needle in d and (statement.search(d) or renamed.search(d))]


def test_calling_is_the_scan_for_every_name() -> None:
    words = SourceWords(SOURCES)
    assert words.calling("build_model") == ["/p/a.py", "/p/b.py"]  # `my_build_model(` holds `build_model(`
    assert words.calling("setup") == ["/p/a.py"]  # `setup (1)` is not `setup(`
    for name in ("build_model", "setup", "model", "Trainer", "T", "x", "Mine", "nothing", "return"):
        assert words.calling(name) == _calling_scan(name), name
    assert words.calling("\u00e9tape") is None  # not ASCII: the caller scans


def test_class_word_holds_every_file_the_class_patterns_match() -> None:
    words = SourceWords(SOURCES)
    for name in ("Trainer", "T", "Mixin", "X", "TrainerX", "base", "mod", "Mine", "Z"):
        found = words.class_word(name)
        assert found is not None
        assert [p for p in found if p in _class_scan(name)] == _class_scan(name), name
    assert words.class_word("Trainer") == ["/p/c.py", "/p/d.py"]  # `Trainer as T`; a base on its own line
    assert words.class_word("TrainerX") == ["/p/e.py"]


def test_calls_are_walked_once_per_statement_in_the_same_order() -> None:
    import ast

    tree = ast.parse("x = f(g(1), k=h(lambda: z()))[i()].m(n())\n")
    first = calls(tree.body[0])
    assert [ast.unparse(c.func) for c in first] == ["f(g(1), k=h(lambda: z()))[i()].m", "n", "i", "f", "h", "g"]
    assert calls(tree.body[0]) is first


def test_renamed_words_are_the_pattern_s() -> None:
    pattern = re.compile(rb"\b(\w+)(?=\s+as\s+\w)")
    texts = [
        b"import numpy as np\nfrom a import (B as C,\n  D  as\tE)\n",
        b"x as as y\nwas z\nx asb y\nx as\n(y)\n as y\nas y\n",
        b"with open(f) as fh, g() as h: pass\nexcept Error as e:\n",
        "caf\u00e9 as x\n\u00e9 as y\nq\\\n as r\n".encode(),
        b"a\r\nas b\x0bas\x0cc __ as _1",
    ]
    for text in [*texts, *SOURCES.values()]:
        assert _renamed(text) == set(pattern.findall(text)), text


def test_aliases_are_the_names_import_lines_rename_a_name_to() -> None:
    words = SourceWords(
        {
            "a.py": b"from x import (\n    main as run_x,\n    other,\n)\nwith open(f) as handle:\n    pass\n",
            "b.py": b"def f():\n    from y import main as run_y\n    import numpy as np\n",
        }
    )
    assert words.aliases("main") == {"run_x", "run_y"}
    assert words.aliases("numpy") == {"np"}
    assert words.aliases("open") == set()  # a `with ... as` is no import


# Sources built of the pieces the patterns look for (line starts, `class`, `from`/`import`, `as`, parentheses,
# white space of every kind, non-ASCII bytes), so that the drawn texts hit their edges
_PIECES = st.sampled_from(
    [
        b"class",
        b"from",
        b"import",
        b"as",
        b"def",
        b"x",
        b"Ab",
        b"_1",
        b"mod.sub",
        b"(",
        b")",
        b"((",
        b",",
        b".",
        b" ",
        b"\t",
        b"\n",
        b"\r",
        b"\f",
        b"\\",
        b"#",
        b"'",
        "\u00e9".encode(),
    ]
)
_TEXTS = st.lists(_PIECES, max_size=40).map(b"".join)
_OLD_CALLED = re.compile(rb"\b(\w+)\(")
_OLD_CLASS_BASES = re.compile(rb"^[ \t]*class\s+\w+\s*\(([^)]*)", re.MULTILINE)
_OLD_IMPORT_LINE = re.compile(rb"^[ \t]*(?:from|import)\b[^\n]*", re.MULTILINE)
_OLD_PARENTHESIZED_IMPORT = re.compile(rb"^[ \t]*from\s+[\w.]+\s+import\s*\(([^)]*)\)", re.MULTILINE)


@given(_TEXTS)
@example(b"class A(\nclass B(x)")  # a match spanning lines: findall goes on after it, not at the next line
@example(b"from a import (b,\nfrom c import (d)")
@example(b"class A(x\n")  # a match ending right after a newline
@settings(max_examples=examples(400))
def test_line_start_patterns_find_what_the_multiline_patterns_find(text: bytes) -> None:
    assert _CLASS_BASES.findall(text) == _OLD_CLASS_BASES.findall(text)
    assert _IMPORT_LINE.findall(text) == _OLD_IMPORT_LINE.findall(text)
    assert _PARENTHESIZED_IMPORT.findall(text) == _OLD_PARENTHESIZED_IMPORT.findall(text)


@given(st.lists(_TEXTS, min_size=1, max_size=4))
@example(["a(b(\u00e9(".encode(), b"((x ( y(", b"from m import (f as g,\n h as i)\nimport k as l"])
@settings(max_examples=examples(200))
def test_every_index_answers_what_its_pattern_per_source_answers(texts: list[bytes]) -> None:
    """Each index against the per-source patterns it was first written with, for every word the texts hold."""
    sources = {f"/p/{i}.py": text for i, text in enumerate(texts)}
    words = SourceWords(sources)
    names = {w.decode() for text in texts for w in re.findall(rb"\w+", text)} | {"x", "b", "as"}
    for name in sorted(names):
        needle = name.encode()
        if name.isidentifier():
            assert words.calling(name) == [p for p, d in sources.items() if needle + b"(" in d], name
            assert words.calling(name) == [
                p for p, d in sources.items() if any(w.endswith(needle) for w in _OLD_CALLED.findall(d))
            ], name
            assert words.class_word(name) == [
                p
                for p, d in sources.items()
                if any(needle in re.findall(rb"\w+", bases) for bases in _OLD_CLASS_BASES.findall(d))
                or needle in re.findall(rb"\b(\w+)(?=\s+as\s+\w)", d)
            ], name
        assert words.importing(name) == [
            p
            for p, d in sources.items()
            if b"import" in d and any(needle in re.findall(rb"\w+", line) for line in _OLD_IMPORT_LINE.findall(d))
        ], name
        old_lines = [
            line
            for d in sources.values()
            if b" as " in d and b"import" in d
            for line in (*_OLD_IMPORT_LINE.findall(d), *_OLD_PARENTHESIZED_IMPORT.findall(d))
        ]
        renamed = {
            a.decode() for line in old_lines for o, a in re.findall(rb"\b(\w+)\s+as\s+(\w+)", line) if o == needle
        }
        assert words.aliases(name) == renamed, name


def test_definitions_at_the_top_level_and_indented() -> None:
    """`def name(` at a line's start (`async` too) is a module's function; indented, a method or a nested one;
    a `def` in a comment counts as indented (it only widens the callers' search)."""
    from dslint.model.source_words import SourceWords

    sources = {
        "a.py": b"def export(x):\n    return x\nasync def fetch(y):\n    pass\n",
        "b.py": b"class K:\n    def fetch(self):\n        pass\n",
        "c.py": b"# def note(\nx = export(1)\n",
    }
    words = SourceWords(sources)
    assert words.definitions("export") == (["a.py"], False)
    assert words.definitions("fetch") == (["a.py"], True)
    assert words.definitions("note") == ([], True)
    assert words.definitions("missing") == ([], False)
