"""The text tests the project index runs over every source, written so that `re` skips ahead to a literal, find
what the patterns they replace found (which tried a match at every byte)."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.model.gpu_saves import _RELATIVE_IMPORT, INITIALIZE_CALLED, _engine_names
from dslint.model.star_imports import _may_bring
from dslint.model.state_saving_calls import plugin_sites
from dslint.model.summary import summarize
from dslint.project.index import _MODULE_FLAG

_PIECES = st.sampled_from(
    [
        b"-",
        b"--",
        b"m",
        b"module",
        b"-m",
        b"x",
        b"_",
        b"1",
        b" ",
        b"\t",
        b"\n",
        b"\r",
        b"\x0b",
        b"\\",
        b".",
        b"from",
        b"DeepSpeedPlugin",
        b"accelerate",
        b"(",
        b"#",
        "\u00e9".encode(),
    ]
)
_TEXTS = st.lists(_PIECES, max_size=30).map(b"".join)


@given(_TEXTS)
@example(b"-m x")
@example(b"x-m x\n--module\tx")
@example(b"x\n--module y")
@example(b"from .a import b")
@example(b"xfrom .a\n_from\\\n.b")
@settings(max_examples=examples(400))
def test_literal_led_patterns_find_what_the_patterns_they_replace_found(text: bytes) -> None:
    module_flag = re.compile(rb"(?:^|\s)(?:-m|--module)\s")
    assert (_MODULE_FLAG.search(text) is None) == (module_flag.search(text) is None)
    relative_import = re.compile(rb"\bfrom[\s\\]*\.")
    assert [m.span() for m in _RELATIVE_IMPORT.finditer(text)] == [m.span() for m in relative_import.finditer(text)]


@given(st.lists(_TEXTS, max_size=4))
@example([b"from accelerate import DeepSpeedPlugin\nx\np = DeepSpeedPlugin (1)", b"DeepSpeedPlugin("])
@settings(max_examples=examples(200))
def test_plugin_sites_are_the_pattern_s(texts: list[bytes]) -> None:
    sources = {f"/p/{i}.py": text for i, text in enumerate(texts)}
    pattern = re.compile(rb"\bDeepSpeedPlugin\s*\(")
    expected = {}
    for path in sorted(sources):
        match = pattern.search(sources[path])
        if match is not None and b"accelerate" in sources[path]:
            expected[path] = sources[path].count(b"\n", 0, match.start()) + 1
    assert plugin_sites(sources) == expected


_ENGINE_PIECES = st.sampled_from(
    [
        "import deepspeed\n",
        "from deepspeed import initialize as go\n",
        "from deepspeed import (\n    initialize  as go)\n",
        "engine, opt, _, _ = ",
        "deepspeed.initialize",
        "(deepspeed.initialize)",
        "go",
        "(model=net)\n",
        " \\\n    (model=net)\n",
        "  # a comment\n",
        "x = (deepspeed.initialize  # why\n    (model=net))\n",
        "initialize weights\n",
        "\n",
    ]
)


@given(st.lists(_ENGINE_PIECES, max_size=8).map("".join))
@example("import deepspeed\nengine, opt, _, _ = deepspeed.initialize \\\n    (model=net)\n")
@example("from deepspeed import initialize as go\nengine, opt, _, _ = go(model=net)\n")
@settings(max_examples=examples(300))
def test_the_initialize_text_test_keeps_every_module_that_assigns_an_engine(text: str) -> None:
    """`gpu_saves` reads a module for engine saves only when `INITIALIZE_CALLED` finds its text: never one where
    `_engine_names` (the summary's assignments from `deepspeed.initialize(...)`) finds an engine."""
    try:
        summary = summarize("/p/train.py", text.encode(), lambda: ())
    except SyntaxError:
        return
    if summary is not None and _engine_names(summary):
        assert INITIALIZE_CALLED.search(text.encode()) is not None


_IMPORT_PIECES = st.sampled_from(
    [
        "import a.b\n",
        "import x as y\n",
        "from m import k, v\n",
        "from m import (\n    name,\n    other as alias,\n)\n",
        "from m import (first,  # a comment (with parentheses)\n    second)\n",
        "from m import \\\n    continued\n",
        "from m import \\\n    (late,\n    later)\n",
        "import os; from m import (semi,\n    colon)\n",
        "from m import (a,  # x)\n    hidden)\n",
        "if flag: from m import inline\n",
        "try:\n    import guarded\nexcept ImportError:\n    pass\n",
        "def f():\n    import inner\n",
        "from .sub import *\n",
        "x = import_count + 1\n",
        "text = 'import name'\n",
        "\n",
    ]
)
_NAMES = ["a", "b", "y", "x", "k", "v", "name", "alias", "other", "first", "second", "continued", "inline"]
_NAMES += ["guarded", "inner", "late", "later", "semi", "colon", "hidden"]


@given(st.lists(_IMPORT_PIECES, max_size=6).map("".join), st.sets(st.sampled_from(_NAMES)))
@example("from m import (first,  # a comment (with parentheses)\n    second)\n", {"second"})
@example("from m import \\\n    continued\n", {"continued"})
@example("from m import \\\n    (late,\n    later)\n", {"later"})
@example("import os; from m import (semi,\n    colon)\n", {"colon"})
@example("from m import (a,  # x)\n    hidden)\n", {"hidden"})
@settings(max_examples=examples(300))
def test_a_module_left_unread_by_a_star_brings_none_of_the_names(text: str, wanted: set[str]) -> None:
    """`star_imports._may_bring` is False only for a module whose imports (as the summary reads them) bind none of
    the names, and that has no star import of its own."""
    summary = summarize("/p/m.py", text.encode(), lambda: ("p",))
    assert summary is not None
    if summary.stars or set(summary.imports) & wanted:
        assert _may_bring(text.encode(), wanted)


def test_the_initialize_text_test_reads_a_line_of_hashes_once() -> None:
    """A comment line of `#`s after `initialize` (a banner in a docstring or a comment): one way to match it. The
    first pattern let each `#` start a comment of its own and took exponential time on such a line (a real
    repository's file hung the index)."""
    banner = b"    # Weights are set by deepspeed.initialize\n" + b"#" * 60 + b"\nx = 1\n"
    assert INITIALIZE_CALLED.search(banner) is None
    assert INITIALIZE_CALLED.search(b"engine = (deepspeed.initialize  " + b"#" * 60 + b"\n    (model=m))") is not None
