"""The text tests the project index runs over every source, written so that `re` skips ahead to a literal, find
what the patterns they replace found (which tried a match at every byte)."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.model.gpu_saves import _RELATIVE_IMPORT
from dslint.model.state_saving_calls import plugin_sites
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
