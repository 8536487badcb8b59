"""Which calls build a model that `deepspeed.initialize` receives: the calls of the model argument's chain and of
every binding it went through (`model_moves.model_lineage`, wrappers included: `model = get_peft_model(model,
cfg)`), here or in another function or module the project model sees it reach (a builder's return, a call
handing it on). A conditional binding leaves the one before it in place (`if lora: model = A(...) else: model =
B(...)`: both reach). A model that never reaches the engine (a frozen teacher, a reference model) is not here.
"""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import Binding, ScriptFacts, iter_call_chain
from dslint.script.model_moves import ModelSink, elsewhere_sinks, model_lineage
from dslint.script.walk import visit_tree


class _Blocks(cst.CSTVisitor):
    """The block (the module or an indented block) holding each small statement's line."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = [module]
        self.block_of: dict[cst.CSTNode, cst.CSTNode] = {}

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.stack.append(node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.stack.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for small in node.body:
            self.block_of[small] = self.stack[-1]


def model_sinks(facts: ScriptFacts) -> list[ModelSink]:
    """Every place a model of this file leaves for `deepspeed.initialize`: here, and elsewhere."""
    here = [
        ModelSink(init.model, init.scope, init.start, None, init.call)
        for init in facts.initialize_calls
        if init.scope is not None
    ]
    return [*here, *elsewhere_sinks(facts)]


class ModelReach:
    """For one file: the calls whose result is, or is wrapped into, a model that initialize receives."""

    def __init__(self, facts: ScriptFacts, module: cst.Module, sinks: list[ModelSink] | None = None) -> None:
        """`sinks`: where models leave, when not the initialize calls (`model_sinks`), e.g. `accelerator.prepare`."""
        self.facts = facts
        blocks = _Blocks(module)
        visit_tree(module, blocks)
        self.block_of = blocks.block_of
        self.calls: set[cst.Call] = set()
        self.sinks_of: dict[cst.Call, list[ModelSink]] = {}
        self.bindings: dict[ModelSink, list[Binding]] = {}
        for sink in model_sinks(facts) if sinks is None else sinks:
            lineage = self._branches(model_lineage(facts, sink))
            self.bindings[sink] = lineage
            reached: set[cst.Call] = set()
            if sink.model is not None:
                reached.update(iter_call_chain(sink.model))
            for binding in lineage:
                if binding.value is not None:
                    reached.update(iter_call_chain(binding.value))
                elif binding.element is not None and isinstance(binding.statement, cst.Assign):
                    # `model, tokenizer = load_pair(name)`: the call returning the tuple the model is taken from
                    reached.update(iter_call_chain(binding.statement.value))
            self.calls |= reached
            for call in reached:
                self.sinks_of.setdefault(call, []).append(sink)

    def reaches(self, call: cst.Call) -> bool:
        return call in self.calls

    def sinks(self, call: cst.Call) -> list[ModelSink]:
        """Where the model `call` builds leaves for initialize (or the sinks given)."""
        return self.sinks_of.get(call, [])

    def _branches(self, lineage: list[Binding]) -> list[Binding]:
        """The lineage with the bindings of the same name that a conditional one leaves in place; a binding in
        the same block as an earlier one (or in a block enclosing it) replaces it on every path."""
        found = list(lineage)
        for binding in lineage:
            block = self.block_of.get(binding.statement) if binding.statement is not None else None
            if block is None:
                continue
            earlier = sorted(
                (b for b in binding.scope.bindings.get(binding.key, []) if b.pos < binding.pos and b not in found),
                key=lambda b: b.pos,
                reverse=True,
            )
            for other in earlier:
                other_block = self.block_of.get(other.statement) if other.statement is not None else None
                if other_block is None or other_block is block or self._encloses(other_block, block):
                    break
                found.append(other)
        return found

    def _encloses(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        facts = self.facts
        return facts.start(outer) <= facts.start(inner) and facts.end(inner) <= facts.end(outer)
