"""DSL451: a `break` or `return` on one rank only leaves the engine's training loop while the others go on."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.facts import Role, method_name
from dslint.script.names import dotted_name
from dslint.script.one_rank import one_process_launches, one_rank_conjunction
from dslint.script.walk import own_nodes

# The engine's calls that every rank must make together in each step: the backward (gradient reduction) and the
# step (ZeRO's partition updates and gathers), or a pipeline engine's `train_batch`.
_COLLECTIVE_STEPS = frozenset({"backward", "step", "train_batch"})

_Loop = cst.For | cst.While

_LOOP = """
import deepspeed
engine, *_ = deepspeed.initialize(model=model, config="ds.json")
for epoch in range(epochs):
    for batch in loader:
        loss = engine(batch)
        engine.backward(loss)
        engine.step()
    {leave}
"""


class LoopLeftOnOneRank(ScriptRule):
    code = "DSL451"
    slug = "loop-left-on-one-rank"
    message = "only this rank leaves the training loop here: the others wait in their next step's collectives"
    return_message = "only this rank returns from the training loop here: the others wait in their next collectives"
    severity = Severity.ERROR
    needs_engine = True
    required_tokens = (b"deepspeed", b"rank")
    alternative_tokens = ((b"deepspeed", b"main_process"), (b"deepspeed", b"process_zero"))
    call_shapes = ()  # reported at a `break` or a `return`, not at a call
    docs = RuleDocs(
        what="""
            Flags a `break` or a `return` in the body of an `if` that is true on one rank only (`if rank == 0:`,
            `if args.local_rank in [-1, 0] and done:`, `if accelerator.is_main_process:`, a name bound to such a
            test: `is_main = rank == 0` ... `if loss < target and is_main:`) when it leaves a loop whose body
            runs the DeepSpeed engine's `backward`, `step` or `train_batch` (in the loop or in a loop inside it):
            typically an early stop, or a target loss, decided and acted on by rank 0 alone. A `break` inside a
            loop of the `if`'s own body (an evaluation loop) leaves only that loop and is not reported; nor is an
            `if` whose `else` leaves too, nor a script every launch of the project starts as one process. A
            `break` from a pass nested in a `while` (`while step < total: for batch in loader:`) whose test
            reads nothing the branch writes before the `break` sends rank 0 back into that `while`, to train on
            under the same test as the other ranks: not reported.
        """,
        why="""
            Every rank must make the engine's collectives together: `engine.backward` reduces the gradients
            across the data-parallel ranks and, under ZeRO, `engine.step` all-gathers the updated partitions.
            When rank 0 alone leaves the loop, the other ranks start the next step and wait in its first
            collective for a rank that never comes: the job hangs until the collective times out (30 minutes by
            default), often after rank 0 has saved and exited. Decide on every rank (all-reduce or broadcast the
            stop flag) and leave on every rank.
        """,
        example="""
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
                if dist.get_rank() == 0 and loss.item() < target:
                    break
        """,
        use_instead="""
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
                stop = torch.tensor(float(loss.item() < target), device=engine.device)
                dist.broadcast(stop, src=0)
                if stop.item():
                    break
        """,
    )
    valid = (
        # every rank leaves: the test is the same on all of them
        Valid(_LOOP.format(leave="if early_stop:\n        break")),
        # rank 0 reports; the loop is left on every rank
        Valid(_LOOP.format(leave="if args.local_rank == 0:\n        print(epoch)\n    if early_stop:\n        break")),
        # the break leaves an evaluation loop of rank 0's own
        Valid(
            _LOOP.format(
                leave="if args.local_rank == 0:\n        for b in val:\n            if bad(b):\n                break"
            )
        ),
        # a loop that runs no engine step
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            for path in files:
                if args.local_rank == 0 and path.endswith(".tmp"):
                    break
            """
        ),
        # rank 0 starts the pass over the loader again: the `while` runs it on until `step` reaches the total
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            while step < total:
                for batch in loader:
                    engine.backward(engine(batch))
                    engine.step()
                    step += 1
                    if args.local_rank == 0 and bad(batch):
                        ckpt = latest()
                        break
            """
        ),
        # one process in all
        Valid(
            _LOOP.format(leave="if args.local_rank == 0 and early_stop:\n        break"),
            files=(("run.sh", "deepspeed --num_gpus 1 train.py\n"), ("ds.json", "{}\n")),
        ),
    )
    invalid = (
        Invalid(_LOOP.format(leave="if args.local_rank == 0 and early_stop:\n        break"), lines=(10,)),
        # rank 0 alone ends the `while` it goes back to: the test reads what the branch wrote
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            while not done:
                for batch in loader:
                    engine.backward(engine(batch))
                    engine.step()
                    if args.local_rank == 0 and converged(batch):
                        done = True
                        break
            """,
            lines=(10,),
        ),
        Invalid(
            """
            import deepspeed
            import torch.distributed as dist
            def train(model, loader, target):
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
                is_main = dist.get_rank() == 0
                for batch in loader:
                    loss = engine(batch)
                    engine.backward(loss)
                    engine.step()
                    if loss.item() < target and is_main:
                        print("target reached")
                        return engine
            """,
            lines=(13,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loops: list[list[_Loop]] = [[]]  # per function, the loops around the node visited
        self.training: dict[int, bool] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.loops.append([])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.loops.pop()

    def visit_For(self, node: cst.For) -> None:
        self.loops[-1].append(node)

    def leave_For(self, original_node: cst.For) -> None:
        self.loops[-1].pop()

    def visit_While(self, node: cst.While) -> None:
        self.loops[-1].append(node)

    def leave_While(self, original_node: cst.While) -> None:
        self.loops[-1].pop()

    def visit_If(self, node: cst.If) -> None:
        loops = self.loops[-1]
        if not loops or not one_rank_conjunction(node.test, self.facts):
            return
        if node.orelse is not None and any(True for _ in _leaving(node.orelse, cst.Break, cst.Return)):
            return  # the other ranks leave too
        if one_process_launches(self.facts):
            return
        for statement in _leaving(node.body, cst.Break, cst.Return):
            left: Sequence[_Loop] = loops[-1:] if isinstance(statement, cst.Break) else loops
            if isinstance(statement, cst.Break) and _runs_again(loops, node, statement):
                continue  # rank 0 is back in the enclosing `while`, under the same test as the others
            if any(self._trains(loop) for loop in left):
                self.report(statement, self.message if isinstance(statement, cst.Break) else self.return_message)

    def _trains(self, loop: _Loop) -> bool:
        """The loop runs the engine's backward, step or train_batch (in its own body, loops inside it too)."""
        if id(loop) not in self.training:
            self.training[id(loop)] = any(
                isinstance(node, cst.Call)
                and method_name(node) in _COLLECTIVE_STEPS
                and isinstance(node.func, cst.Attribute)
                and (answer := self.facts.role_of(node.func.value, at=node)) is not None
                and answer.role is Role.ENGINE
                for node in own_nodes(loop)
            )
        return self.training[id(loop)]


def _runs_again(loops: Sequence[_Loop], test: cst.If, leaving: cst.CSTNode) -> bool:
    """The loop a `break` leaves is the body of a `while` (`while step < total: for batch in loader: ...`) whose test
    reads nothing the one-rank branch writes on its way to the `break`: rank 0 starts that pass again and trains on
    under the same test as the other ranks (a `for epoch in ...` would move it on to the next epoch instead)."""
    if len(loops) < 2 or not isinstance(loops[-2], cst.While):
        return False
    read = {dotted_name(node) for node in own_nodes(loops[-2].test) if isinstance(node, (cst.Name, cst.Attribute))}
    return not (_written_before(test, leaving) & read)


def _written_before(top: cst.CSTNode, target: cst.CSTNode) -> set[str | None]:
    """The names and attributes (`done`, `self.stop`) assigned on the way from `top` down to `target`: in the
    statements before each block's one holding it, the arms not taken left out."""
    path = _path(top, target) or []
    written: set[str | None] = set()
    for holder, held in itertools.pairwise(path):
        body = getattr(holder, "body", None)
        if not isinstance(body, (list, tuple)):
            continue
        for statement in body[: next((i for i, s in enumerate(body) if s is held), 0)]:
            for node in own_nodes(statement):
                targets = (
                    [t.target for t in node.targets]
                    if isinstance(node, cst.Assign)
                    else [node.target]
                    if isinstance(node, (cst.AugAssign, cst.AnnAssign))
                    else []
                )
                written.update(dotted_name(t) for t in targets if isinstance(t, (cst.Name, cst.Attribute)))
    return written


def _path(node: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The nodes from `node` down to `target`, both included; None when `target` is not under `node`."""
    if node is target:
        return [node]
    for child in node.children:
        found = _path(child, target)
        if found is not None:
            return [node, *found]
    return None


def _leaving(block: cst.CSTNode, *kinds: type[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """The statements of `kinds` in `block` that leave the loop around it: not inside a loop of the block (for a
    `break`) nor inside a function or class defined there."""
    for child in block.children:
        if isinstance(child, kinds):
            yield child
        elif isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        elif isinstance(child, (cst.For, cst.While)):
            yield from (node for node in _leaving(child, *kinds) if isinstance(node, cst.Return))
        else:
            yield from _leaving(child, *kinds)
