"""Whether the author handles the ZeRO stage right after a call: a later statement of the call's block (or of a
block around it, in the same function) is an `if` that tests the stage. DeepSpeed-Chat's shape:

    if args.global_rank == 0:
        save_hf_format(model, tokenizer, args)          # a plain state_dict() save
    if args.zero_stage == 3:
        save_zero_three_model(model, args.global_rank, args.output_dir, zero_stage=args.zero_stage)

where the stage-3 branch gathers the partitions and overwrites what the plain save wrote.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dslint.model.summary import nodes_of

# Words of a name or key that reads the ZeRO stage (`args.zero_stage`, `is_zero3`, `ds_config["zero_stage"]`).
STAGE_WORDS = ("stage", "zero3", "zero_3")


def tests_stage(test: ast.expr) -> bool:
    """Whether an `if` test reads the ZeRO stage (a name, attribute or string mentioning it)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Name):
            word = node.id
        elif isinstance(node, ast.Attribute):
            word = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "stage" in node.value.lower():
                return True
            continue
        else:
            continue
        if any(stage in word.lower() for stage in STAGE_WORDS):
            return True
    return False


def stage_tested_after(tree: ast.Module, line: int) -> bool:
    """Whether, in the function holding the statement at `line`, a statement after it (in its block or a block
    around it) is an `if` testing the ZeRO stage."""
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
        *nodes_of(tree, ast.FunctionDef),
        *nodes_of(tree, ast.AsyncFunctionDef),
    ]
    holders = [node for node in functions if _spans(node, line)]
    # the innermost function holding the line starts last
    body = max(holders, key=lambda node: node.lineno).body if holders else tree.body
    return _tested_after(body, line)


def _tested_after(body: list[ast.stmt], line: int) -> bool:
    for index, statement in enumerate(body):
        if not _spans(statement, line):
            continue
        later = body[index + 1 :]
        if any(isinstance(s, ast.If) and tests_stage(s.test) for s in later):
            return True
        return any(_tested_after(block, line) for block in _blocks(statement))
    return False


def _blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    for name in ("body", "orelse", "finalbody"):
        block = getattr(statement, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(statement, "handlers", ()):
        yield handler.body


def _spans(node: ast.stmt, line: int) -> bool:
    return node.lineno <= line <= (node.end_lineno or node.lineno)
