"""DSL472: the script's own DataLoader feeds the engine batches of another size than the config's micro batch."""

from __future__ import annotations

import ast
import functools

import libcst as cst

from dslint.config.tree import node_at
from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.model.library import DATA_LOADERS
from dslint.project.config_link import resolve_config, resolve_config_expression
from dslint.project.evidence import evidence
from dslint.project.inputs import shown_path
from dslint.project.resolved_configs import ResolvedConfig
from dslint.project.script_parser import argparse_defaults
from dslint.script.facts import Role, ScopeKind
from dslint.script.loop import unwrapped_loader
from dslint.script.model_moves import argument_at
from dslint.script.project_facts import LaunchedConfig
from dslint.script.walk import own_nodes

MICRO = "train_micro_batch_size_per_gpu"

_SCRIPT = """
import deepspeed
from torch.utils.data import DataLoader, DistributedSampler

def train(model, dataset):
    config = {{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1}}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    loader = DataLoader(dataset, batch_size={batch}, sampler=DistributedSampler(dataset))
    for batch in loader:
        {body}
    return engine
"""
_STEP = "engine.backward(engine(batch.to(engine.device)))\n        engine.step()"


def _script(batch: str, body: str = _STEP) -> str:
    return _SCRIPT.format(batch=batch, body=body)


_MADE = """
import deepspeed
from torch.utils.data import DataLoader

def make_loader(dataset, batch_size=8):
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
    return loader

def train(model, dataset):
    config = {{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1}}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    loader = make_loader({given})
    for batch in loader:
        engine.backward(engine(batch.to(engine.device)))
        engine.step()
"""


class LoaderBatchNotMicroBatch(ScriptRule):
    code = "DSL472"
    slug = "loader-batch-not-micro-batch"
    message = "this DataLoader's batch is not the engine's micro batch"
    severity = Severity.WARNING
    required_tokens = (b"deepspeed", b"initialize", b"DataLoader", b"batch_size")
    docs = RuleDocs(
        what="""
            Flags `DataLoader(..., batch_size=B)` whose batches a training loop of the same function hands to
            an engine of `deepspeed.initialize` (the loop calls the engine's `backward`), when the engine's config
            gives `train_micro_batch_size_per_gpu` as a number M other than B. B is read when it is a number, a
            name bound to one, or a key of a config dict (`batch_size=config["train_batch_size"]`, the global
            batch). A loader a module-level function of the file builds from its parameter and returns (`def
            make_loader(ds, batch_size=32)`) is read at each call whose result the loop iterates, with the size
            the call gives or the parameter's default, and reported there. A loader with a `batch_sampler`, a loop
            that splits each batch in an inner loop, and a config that cannot be read are left alone; so is
            DeepSpeed's own loader (`initialize(training_data=...)`).
        """,
        why="""
            DeepSpeed never looks at the batch dimension of what it is given: `runtime/config.py` checks only the
            three batch numbers of the config against each other, and the engine counts samples from the config
            (`global_samples += train_batch_size()` at each step in `runtime/engine.py`; the throughput timer and
            the data-efficiency code use `train_micro_batch_size_per_gpu()`). A loop that feeds batches of B
            trains with a global batch of B x accumulation x GPUs while the config, the logs, the samples
            counted and any learning-rate schedule sized from them say M: the run is not the one configured,
            silently. Only DeepSpeed's own loader (`deepspeed_io`) uses M.
        """,
        example="""
            config = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1}
            engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
            loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
        """,
        use_instead="""
            config = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1}
            engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
            size = engine.train_micro_batch_size_per_gpu()
            loader = DataLoader(dataset, batch_size=size, sampler=DistributedSampler(dataset))
        """,
    )
    valid = (
        Valid(_script("8")),
        Valid(_script("engine.train_micro_batch_size_per_gpu()")),
        Valid(_script("32", "print(engine(batch.to(engine.device)))")),  # evaluation: no backward
        Valid(
            _script(
                "32",
                "for part in batch.split(8):\n"
                "            engine.backward(engine(part.to(engine.device)))\n"
                "            engine.step()",
            )
        ),
        Valid(_script("32").replace("batch_size=32,", "batch_sampler=sampler, batch_size=32,")),
        Valid(_script("args.batch_size")),  # an option of no known value
        # a function of the module building the loader: the size its call gives, or its default, is the micro batch
        Valid(_MADE.format(given="dataset")),
        Valid(_MADE.format(given="dataset, batch_size=8")),
    )
    invalid = (
        Invalid(_script("32"), lines=(8,)),
        Invalid(_script('config["train_batch_size"]'), lines=(8,)),
        Invalid(_script("size").replace("    loader =", "    size = 16\n    loader ="), lines=(9,)),
        Invalid(  # the parser's default, which no launch changes
            "import argparse\n"
            + _script("args.batch_size").replace(
                "def train(model, dataset):",
                "parser = argparse.ArgumentParser()\n"
                "parser.add_argument('--batch_size', type=int, default=32)\n"
                "args = parser.parse_args()\n\n"
                "def train(model, dataset):",
            ),
            lines=(13,),
        ),
        Invalid(_MADE.format(given="dataset, batch_size=64"), lines=(12,)),
        Invalid(_MADE.format(given="dataset, 32"), lines=(12,)),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loaders: list[cst.Call] = []
        self.loops: list[cst.For] = []
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if self.facts.qualified(node.func) in DATA_LOADERS:
            self.loaders.append(node)
        self.calls.append(node)

    def visit_For(self, node: cst.For) -> None:
        self.loops.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        for loader in self.loaders:
            self._loader(loader)

    def _loader(self, loader: cst.Call) -> None:
        facts = self.facts
        keywords = {arg.keyword.value: arg.value for arg in loader.args if arg.keyword is not None}
        if "batch_sampler" in keywords or any(arg.star for arg in loader.args):
            return
        given = keywords.get("batch_size")
        if given is None:
            positional = [arg.value for arg in loader.args if arg.keyword is None]
            given = positional[1] if len(positional) > 1 else None
        small = facts.small_statement_of_call.get(loader)
        if given is None or not (isinstance(small, cst.Assign) and small.value is loader and len(small.targets) == 1):
            return
        target = small.targets[0].target
        if not isinstance(target, cst.Name):
            return
        size = self._number(given, loader)
        if size is not None:
            self._fed(loader, target, given, size)
        elif isinstance(given, cst.Name):
            self._returned(loader, target, given)

    def _fed(self, made: cst.Call, target: cst.Name, given: cst.BaseExpression, size: int) -> None:
        """The loops of `made`'s function over the name `target` it is bound to, after it: each that hands the
        batches to an engine whose micro batch is another number is reported at `given`."""
        facts = self.facts
        scope = facts.scope_at(made)
        for loop in self.loops:
            source = unwrapped_loader(loop.iter)
            if not (isinstance(source, cst.Name) and source.value == target.value):
                continue
            if facts.scope_at(source) is not scope or facts.start(source) < facts.start(made):
                continue
            if facts.assigned_value(source, source) is not made:
                continue
            engine = self._engine_driven(loop)
            if engine is None:
                continue
            config = resolve_config(self.context, engine)
            micro = config.get(MICRO) if config is not None else None
            if config is None or isinstance(micro, bool) or not isinstance(micro, int) or micro == size:
                return
            self._report(given, size, micro, config, engine)
            return

    def _returned(self, loader: cst.Call, target: cst.Name, given: cst.Name) -> None:
        """A module-level function returning the loader it builds with its parameter's batch size (`def
        make_loader(batch_size=32): loader = DataLoader(ds, batch_size=batch_size); return loader`): each call of
        it bound to a name its caller's training loop iterates, with the size the call gives (or the default)."""
        scope = self.facts.scope_at(loader)
        function = scope.node
        module_level = scope.parent is not None and scope.parent.kind is ScopeKind.MODULE
        if not isinstance(function, cst.FunctionDef) or not module_level:
            return
        params = list(function.params.params)
        names = [param.name.value for param in params]
        returns = [node.value for node in own_nodes(function.body) if isinstance(node, cst.Return)]
        returned = {value.value for value in returns if isinstance(value, cst.Name)}
        if given.value not in names or target.value not in returned:
            return
        index = names.index(given.value)
        for call in self.calls:
            if isinstance(call.func, cst.Name) and call.func.value == function.name.value:
                self._called(call, given.value, index, params[index].default)

    def _called(self, call: cst.Call, name: str, index: int, default: cst.BaseExpression | None) -> None:
        """A call of the loader-building function: the batch size it passes as `name` (at `index`), else `default`."""
        passed = argument_at(call, None, name) or argument_at(call, index, None)
        written = passed if passed is not None else default
        size = self._number(written, call) if written is not None else None
        small = self.facts.small_statement_of_call.get(call)
        if size is None or not isinstance(small, cst.Assign) or len(small.targets) != 1 or small.value is not call:
            return
        bound = small.targets[0].target
        if isinstance(bound, cst.Name):
            self._fed(call, bound, passed if passed is not None else call, size)

    def _number(self, expression: cst.BaseExpression, at: cst.CSTNode) -> int | None:
        """A batch size written as a number, a name bound to one, or a key of a readable config dict."""
        if isinstance(expression, cst.Name):
            value = self.facts.assigned_value(expression, at)
            return self._number(value, at) if isinstance(value, (cst.Integer, cst.Subscript)) else None
        if isinstance(expression, cst.Integer):
            return int(expression.value)
        if isinstance(expression, cst.Attribute) and isinstance(expression.value, cst.Name):
            return self._option_value(expression.attr.value)
        if isinstance(expression, cst.Subscript) and len(expression.slice) == 1:
            index = expression.slice[0].slice
            key = index.value if isinstance(index, cst.Index) else None
            if not (isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str)):
                return None
            config = resolve_config_expression(self.context, expression.value)
            value = config.get(key.evaluated_value) if config is not None else None
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        return None

    def _option_value(self, name: str) -> int | None:
        """`args.batch_size`: the one number every launch of the script gives the option, or its parser's default
        where a launch gives none (none when no launch of the script is known and the parser declares no default,
        or when the launches differ)."""
        project = self.facts.project
        launches: list[LaunchedConfig | None] = list(project.launches) if project is not None else []
        values: set[int] = set()
        for launch in launches or [None]:
            given = None
            if launch is not None:
                options = {key.replace("-", "_"): value for key, value in launch.options.items()}
                given = options.get(name)
                if name in options and given is None:
                    return None  # given a value that is not a literal
            value = given if given is not None else self._defaults.get(name)
            if value is None or not value.isdigit():
                return None
            values.add(int(value))
        return values.pop() if len(values) == 1 else None

    @functools.cached_property
    def _defaults(self) -> dict[str, str]:
        try:
            return argparse_defaults(ast.parse(self.context.text))
        except (SyntaxError, ValueError, RecursionError):
            return {}

    def _engine_driven(self, loop: cst.For) -> Engine | None:
        """The engine whose `backward` the loop's own body calls on each batch; None when there is none, or when
        the body splits its batch in a loop of its own (each piece a micro batch)."""
        found: Engine | None = None
        for node in own_nodes(loop.body):
            if isinstance(node, cst.For):
                return None
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "backward"
            ):
                answer = self.facts.role_of(node.func.value, node)
                if answer is not None and answer.role is Role.ENGINE and answer.engine is not None:
                    found = answer.engine
        return found

    def _report(self, given: cst.BaseExpression, size: int, micro: int, config: ResolvedConfig, engine: Engine) -> None:
        related: list[Related] = []
        where = "its config"
        if config.path is not None and config.tree is not None:
            node = node_at(config.tree, MICRO)
            if node is not None:
                shown = shown_path(str(config.path))
                related.append(Related(shown, node.start.line, node.start.column, MICRO))
                where = f"{shown}:{node.start.line}"
        shown_engine = evidence(self.context, engine)
        related.extend(shown_engine.related)
        self.report(
            given,
            f"DataLoader batch {size} is not the micro batch {micro} DeepSpeed counts ({where}); "
            "use engine.train_micro_batch_size_per_gpu()",
            related=list(dict.fromkeys(related)),
        )
