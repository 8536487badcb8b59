"""`index._holders` reads each launcher once for every script name, and answers as `name in text` does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dslint.project.index import _holders

_PIECES = st.sampled_from([b"train", b"_", b"a", b".py", b".p", b"y", b" ", b"/", b"x.py", b"\n", b"ds"])
_TEXTS = st.lists(_PIECES, max_size=30).map(b"".join)
_NAMES = st.lists(_PIECES, min_size=1, max_size=6).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a.sh", "b.md", "c.py", "d.ipynb"]), _TEXTS), st.sets(_NAMES, max_size=6))
def test_holders_are_the_texts_holding_each_name(texts: dict[str, bytes], names: set[bytes]) -> None:
    found = _holders(texts, names)
    assert found == {name: [at for at, text in texts.items() if name in text] for name in names}


def test_overlapping_and_repeated_mentions() -> None:
    texts = {"run.sh": b"python my_train.py && python train.py\npython train.py", "doc.md": b"see .py files"}
    found = _holders(texts, {b"train.py", b"my_train.py", b"y_train.py", b"eval.py", b"notebook.ipynb"})
    assert found == {
        b"train.py": ["run.sh"],
        b"my_train.py": ["run.sh"],
        b"y_train.py": ["run.sh"],
        b"eval.py": [],
        b"notebook.ipynb": [],
    }
