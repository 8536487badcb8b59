"""The shortcuts of the shell reader find what the full reading finds: `launchers._inert` skips only lines that
`parse_shell` does nothing with, and `shell_directories.shell_words` splits as `shlex.split` does. Checked on
generated scripts and texts built from the words and characters those readers look at (derandomized)."""

from __future__ import annotations

import shlex
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.project import launchers
from dslint.project.launchers import parse_shell
from dslint.project.shell_directories import shell_words

# Pieces of the commands `parse_shell` acts on (launches, directory changes, clones, sourced files, assignments),
# written as scripts and documents write them (a word split by quotes, a launcher or script in a variable), and
# lines it does nothing with (a README's Python code, other commands).
_HEADS = ["deepspeed", "torchrun --nproc_per_node 2", "accelerate launch", "python", "python3", "py'thon'", "$CMD"]
_HEADS += ["${CMD}", "${X:-python}", "python -m torch.distributed.run", "srun -N 2 python", "uv run deepspeed"]
_SCRIPTS = ["train.py", "src/x.py", "$S", "$DIR/train.py", "-m pkg.train", "--module pkg.train", "x.p'y'"]
_OPTIONS = ["", "--deepspeed_config ds.json", "--lr 1e-5", "--deepspeed ${CFG:-ds.json}"]
_LAUNCHES = st.tuples(
    st.sampled_from(["", "", "CUDA_VISIBLE_DEVICES=0 ", "nohup "]),
    st.sampled_from(_HEADS),
    st.sampled_from(_SCRIPTS),
    st.sampled_from(_OPTIONS),
).map(lambda parts: f"{parts[0]}{parts[1]} {parts[2]} {parts[3]}".rstrip())
_MOVES = ["cd src", "pushd src", "popd", "c'd' src", "cd ..", "cd $D", "${1:-cd} src", "p'ushd' src", "cd repo"]
_MOVES += ["git clone https://h/repo.git", "git clone https://h/repo.git $D", "git cl'one' https://h/r.git repo"]
_OTHERS = ["source env.sh", ". ./env.sh", "  source ./env.sh", "CMD=python", "export S=x.py", "local D=repo"]
_OTHERS += ["X=1", 'DIR=$(dirname "$0")', "A=$CMD", "readonly S=train.py", "CMD=echo", "D="]
_OTHERS += ["import deepspeed", "model, _, _, _ = deepspeed.initialize(args=args)", "x = 1", "print('cd')"]
_OTHERS += ["pip install -e .", "echo $S", "wait", "(", ")", "'", "-m", "--lr 1e-5 \\"]
_COMMAND = st.one_of(_LAUNCHES, st.sampled_from(_MOVES), st.sampled_from(_OTHERS))
_JOINED = st.tuples(_COMMAND, st.sampled_from(["", " && ", "; ", " | ", " || "]), _COMMAND).map(
    lambda parts: parts[0] + parts[1] + parts[2] if parts[1] else parts[0]
)
# A line: one or two commands, maybe in a subshell, maybe with a comment, a continuation or a backslash and a space.
_PHYSICAL = st.tuples(
    st.sampled_from(["", "", "(", "  "]),
    _JOINED,
    st.sampled_from(["", "", "", " # note", ")", " \\", " \\ "]),
).map("".join)
_SCRIPT = st.lists(_PHYSICAL, max_size=8).map("\n".join)
_SOURCED = {"env.sh": "CMD=python\nexport Y=train.py\n", "./env.sh": "D=src\n"}


def _read(name: str) -> str | None:
    return _SOURCED.get(name)


@settings(max_examples=examples(1500))
@given(_SCRIPT)
@example("pushd src\npython train.py")
@example("c'd' src\npython train.py")
@example("git clone https://h/repo.git\ncd repo\ndeepspeed train.py")
@example("source env.sh\n$CMD x.py")
@example("source env.sh # vars\n$CMD x.py")
@example('X=1 # the port\nDIR=$(dirname "$0")\ndeepspeed $DIR/train.py')
@example('py"thon" -m pkg.train')
@example("(cd src && python train.py)\npython x.py")
def test_skipped_lines_change_nothing(text: str) -> None:
    """Every line `_inert` lets `parse_shell` skip is one the full reading does nothing with: the launches found
    (scripts, options, environments, directories) are the same as when no line is skipped."""
    found = parse_shell("/p/run.sh", text, _read)
    with mock.patch.object(launchers, "_inert", lambda logical, wrappers=False: False):
        assert found == parse_shell("/p/run.sh", text, _read)


# Characters that matter to shlex (quotes, a backslash, its whitespace) and some that do not (other spaces).
_TEXT = st.text(st.sampled_from(list("ab=-#$;|&()' \"\\\t\r\n\x0b\x0c\x1c\x85\xa0\u2003")), max_size=20)


@settings(max_examples=examples(1500))
@given(_TEXT)
@example("a\x0bb")
@example("a\xa0b c")
@example("'a b' c")
@example("a\\ b")
@example("'open")
def test_shell_words_are_shlex_words(text: str) -> None:
    """`shell_words` is `shlex.split`: the same words, and a ValueError for the same texts."""
    try:
        expected: list[str] | None = shlex.split(text)
    except ValueError:
        expected = None
    try:
        words: list[str] | None = shell_words(text)
    except ValueError:
        words = None
    assert words == expected
