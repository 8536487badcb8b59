"""Whether a module's code shards its data some way other than a `DistributedSampler` given to each loader, or
streams it (`library.SHARDED_ELSEWHERE`): the words must be used by its code, as a name, an attribute, a keyword
or a base class. An import left unused, a docstring ("streaming processing") or a comment says nothing (DSL445,
`returned_loaders`)."""

from __future__ import annotations

import ast

from dslint.model.library import SHARDED_ELSEWHERE
from dslint.model.summary import nodes_of

_WORDS = frozenset(word.strip(b".(").decode() for word in SHARDED_ELSEWHERE)


def shards_elsewhere(source: bytes, tree: ast.Module | None = None) -> bool:
    """The byte test first (cheap); then CPython's tree (`tree`, when the caller has it), where a word must be the
    code's own. A module that does not compile is judged by its bytes."""
    if not any(word in source for word in SHARDED_ELSEWHERE):
        return False
    known = _ANSWERS.get(id(tree)) if tree is not None else None
    if known is not None and known[0] is tree:
        return known[1]
    answer = _in_code(source, tree)
    if tree is not None:
        if len(_ANSWERS) > 256:
            _ANSWERS.clear()
        _ANSWERS[id(tree)] = (tree, answer)
    return answer


_ANSWERS: dict[int, tuple[ast.Module, bool]] = {}  # a module's answer, asked once per callee of it


def _in_code(source: bytes, tree: ast.Module | None) -> bool:
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True
    # a name, an attribute or a keyword of the code (its nodes by type: `nodes_of`, shared with the other questions)
    return (
        any(node.id in _WORDS for node in nodes_of(tree, ast.Name))
        or any(node.attr in _WORDS for node in nodes_of(tree, ast.Attribute))
        or any((node.arg or "") in _WORDS for node in nodes_of(tree, ast.keyword))
    )
