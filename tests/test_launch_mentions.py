"""`launch_documents.mention_holders` reads each launcher once for every script name, and answers as `name in text`
does, but that a name ending in `.py` must start where no file name's character comes before it (`trainer_main.py`
is no mention of `main.py`)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dslint.project.launch_documents import mention_holders as _holders

_PIECES = st.sampled_from([b"train", b"_", b"a", b".py", b".p", b"y", b" ", b"/", b"x.py", b"\n", b"ds"])
_TEXTS = st.lists(_PIECES, max_size=30).map(b"".join)
_NAMES = st.lists(_PIECES, min_size=1, max_size=6).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a.sh", "b.md", "c.py", "d.ipynb"]), _TEXTS), st.sets(_NAMES, max_size=6))
def test_holders_are_the_texts_holding_each_name(texts: dict[str, bytes], names: set[bytes]) -> None:
    found = _holders(texts, names)
    assert found == {name: [at for at, text in texts.items() if _mentions(name, text)] for name in names}


_NAMED = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."


def _mentions(name: bytes, text: bytes) -> bool:
    if not name.endswith(b".py") or name[:1] not in _NAMED:
        return name in text
    at = text.find(name)
    while at >= 0:
        if at == 0 or text[at - 1] not in _NAMED:
            return True
        at = text.find(name, at + 1)
    return False


def test_overlapping_and_repeated_mentions() -> None:
    texts = {"run.sh": b"python my_train.py && python train.py\npython train.py", "doc.md": b"see .py files"}
    found = _holders(texts, {b"train.py", b"my_train.py", b"y_train.py", b"eval.py", b"notebook.ipynb"})
    assert found == {
        b"train.py": ["run.sh"],
        b"my_train.py": ["run.sh"],
        b"y_train.py": [],
        b"eval.py": [],
        b"notebook.ipynb": [],
    }


def test_a_longer_file_name_is_no_mention_of_its_tail() -> None:
    texts = {"run_direct.sh": b"python trainer_main.py --output_dir out\n"}
    assert _holders(texts, {b"main.py", b"trainer_main.py"}) == {
        b"main.py": [],
        b"trainer_main.py": ["run_direct.sh"],
    }


def test_a_path_or_a_word_boundary_before_the_name_is_a_mention() -> None:
    texts = {"a.sh": b"srun python src/main.py\n", "b.md": b"run `main.py` first\n", "c.sh": b"main.py\n"}
    assert _holders(texts, {b"main.py"}) == {b"main.py": ["a.sh", "b.md", "c.sh"]}
