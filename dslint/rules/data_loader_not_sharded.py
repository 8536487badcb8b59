"""DSL445: a plain `DataLoader` (no sampler) feeds the engine's training loop under a launch of several processes."""

from __future__ import annotations

import os
from collections.abc import Mapping

import libcst as cst

from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.bindings import BindingKind
from dslint.model.library import (
    DATA_LOADERS,
    RANK_WORDS,
    SAMPLER_GIVEN,
    SINGLE_PROCESS_SAMPLERS,
    SYNTHETIC_DATA,
)
from dslint.model.sharding import shards_elsewhere
from dslint.project.world_size import EVERY_GPU_SOURCE
from dslint.script.engine_calls import argument
from dslint.script.facts import Role
from dslint.script.loop import unwrapped_loader
from dslint.script.names import dotted_name
from dslint.script.project_facts import LaunchedConfig
from dslint.script.walk import own_nodes, own_returns, walk

# Calls a loop may wrap its loader in (`for step, batch in enumerate(tqdm(loader))`).

_SCRIPT = """\
import deepspeed
from torch.utils.data import DataLoader

def train(model, dataset, config):
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(3):
        for batch in loader:
            loss = engine(batch)
            engine.backward(loss)
            engine.step()
"""
_HANDED_ON = """\
import deepspeed
from torch.utils.data import DataLoader

def train_epoch(engine, batches):
    for batch in batches:
        engine.backward(engine(batch))
        engine.step()

def main(model, dataset, other, config):
    params = {"batch_size": 8, "shuffle": True}
    loader = DataLoader(dataset, **params)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    for epoch in range(3):
        train_epoch(engine, loader)
"""
_TWO = (("run.sh", "deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n"),)
# a module of the project returning two plain loaders, and a script looping over one of them where the engine trains
_LOADERS = (
    "data.py",
    "from torch.utils.data import DataLoader\n\n"
    "def get_loaders(data, batch_size):\n"
    "    train = DataLoader(data['train'], batch_size=batch_size, shuffle=True)\n"
    "    return train, DataLoader(data['val'], batch_size=batch_size)\n",
)
_FROM_HELPER = """\
import deepspeed
from data import get_loaders

def main(model, data, config):
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    train_loader, val_loader = get_loaders(data, 8)
    for batch in train_loader:
        engine.backward(engine(batch))
        engine.step()
"""


# a Trainer subclass returning its own loader (a Hugging Face Trainer script started as several processes)
_OVERRIDE = """\
from torch.utils.data import DataLoader
from transformers import HfArgumentParser, Trainer, TrainingArguments

class PackedTrainer(Trainer):
    def get_train_dataloader(self):
        loader = DataLoader(self.train_dataset, batch_size=self.args.per_device_train_batch_size, shuffle=True)
        return loader

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
PackedTrainer(model=build(), args=args, train_dataset=data()).train()
"""
_HF_TWO = (("run.sh", "deepspeed --num_gpus 4 train.py --deepspeed ds.json --output_dir out\n"), ("ds.json", "{}\n"))


class DataLoaderNotSharded(ScriptRule):
    code = "DSL445"
    slug = "data-loader-not-sharded"
    message = "DataLoader without a DistributedSampler under several processes: every rank trains on the same data"
    severity = Severity.WARNING
    required_tokens = (b"DataLoader", b"backward")
    runs_without_engine_on = ((b"DataLoader", b"get_train_dataloader"),)  # a Trainer's own loader, overridden
    # a call of a project function returning a plain DataLoader (`ProjectFacts.returned_loaders`): no DataLoader here
    runs_on_returned_loaders = True
    docs = RuleDocs(
        what="""
            Flags `torch.utils.data.DataLoader(dataset, ...)` built without a `sampler=` or `batch_sampler=` (or
            with torch's single-process `RandomSampler`/`SequentialSampler`, which order the whole dataset) (its
            keywords may come from a dict literal, `DataLoader(dataset, **params)`) when the loop over it (directly,
            through `enumerate`/`tqdm`/`iter`, through a name, a `self` attribute, the return value of a function of
            the same module that builds it, or a parameter of a function of the module that a call hands the loader,
            up to two calls deep: `train_epoch(engine, loader)`; or a project function of any module returning it,
            alone or as an item of its result, reported at that call) calls the DeepSpeed engine's `backward`, and a
            launcher of the project (a script, a Makefile, a document's code block, a plain-text file of commands
            such as `cmd.txt`) starts the script as more than one process (`deepspeed --num_gpus 2`, a hostfile's
            slots, `torchrun --nproc_per_node 4`, several nodes, or the `deepspeed` launcher with no count, which
            starts one process for each GPU of the node). The finding names the launch. A file that shards its data
            another way (`DistributedSampler`, `split_dataset_by_node`, `.shard(`, an `IterableDataset`, streaming)
            or whose dataset argument names a rank or a world size is left alone, and so is made-up data
            (`random_dataset(...)`, `dummy`, `fake`: a benchmark's tensors), as is a loader handed to
            `deepspeed.initialize` as `training_data` (the engine builds its own sampler) or to accelerate's
            `prepare`. Also a Hugging Face `Trainer` subclass's `get_train_dataloader` returning such a loader (or a
            name bound to it) without `self.accelerator.prepare` (the Trainer's own method prepares its loader,
            which is what shards it; its training loop does not prepare the one the override returns), under the
            same launches.
        """,
        why="""
            DeepSpeed shards data only for the loader it builds itself (`deepspeed.initialize(training_data=...)`
            or `engine.deepspeed_io(dataset)`, which use a `DistributedSampler` over the data-parallel ranks,
            `runtime/dataloader.py`). A `DataLoader` of your own is not touched: with `shuffle=True` each
            process draws the same order (the same default seed), without it the same sequence, so every rank
            trains on the same batches. The gradients averaged across ranks are then the gradients of one
            rank's batch: the run does N times the work for the progress of one process, and an epoch is N
            times longer than it looks.
        """,
        example="""
            # launched with: deepspeed --num_gpus 8 train.py
            loader = DataLoader(dataset, batch_size=8, shuffle=True)
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
        """,
        use_instead="""
            sampler = DistributedSampler(dataset, shuffle=True)
            loader = DataLoader(dataset, batch_size=8, sampler=sampler)
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                for batch in loader:
                    ...
            # or: engine, _, loader, _ = deepspeed.initialize(..., training_data=dataset)
        """,
    )
    valid = (
        # the override prepares its loader, or the launch is one process
        Valid(_OVERRIDE.replace("return loader", "return self.accelerator.prepare(loader)"), files=_HF_TWO),
        Valid(_OVERRIDE, files=(("run.sh", "deepspeed --num_gpus 1 train.py --deepspeed ds.json\n"), _HF_TWO[1])),
        # the loop runs over the other item, or the helper's module shards its data
        Valid(_FROM_HELPER.replace("in train_loader", "in sharded(val_loader)"), files=(*_TWO, _LOADERS)),
        Valid(
            _FROM_HELPER,
            files=(*_TWO, (_LOADERS[0], _LOADERS[1].replace("shuffle=True", "sampler=DistributedSampler(data)"))),
        ),
        Valid(_SCRIPT.replace("shuffle=True", "sampler=DistributedSampler(dataset)"), files=_TWO),
        Valid(_SCRIPT, files=(("run.sh", "deepspeed --num_gpus 1 train.py --deepspeed_config ds.json\n"),)),
        Valid(_SCRIPT),  # no launcher: the number of processes is not known
        # the loop over the loader is an evaluation: no backward
        Valid(
            _SCRIPT.replace(
                "            engine.backward(loss)\n            engine.step()\n", "            print(loss)\n"
            ),
            files=_TWO,
        ),
        # the name is bound again to the loader initialize builds from the dataset (sharded): the loop runs that
        Valid(
            _SCRIPT.replace(
                "    for epoch in range(3):",
                "    engine, _, loader, _ = deepspeed.initialize(model=model, training_data=dataset, config=config)\n"
                "    for epoch in range(3):",
            ),
            files=_TWO,
        ),
        # the dataset is already this rank's part
        Valid(_SCRIPT.replace("DataLoader(dataset,", "DataLoader(dataset[rank::world_size],"), files=_TWO),
        # a sampler of the project's own making may shard
        Valid(_SCRIPT.replace("shuffle=True", "sampler=make_sampler(dataset)"), files=_TWO),
        # the dict of keywords names a sampler; the loader handed to the training function is that one, the
        # plain one goes to an evaluation with no backward
        Valid(_HANDED_ON.replace('"shuffle": True', '"sampler": make_sampler(dataset)'), files=_TWO),
        Valid(_HANDED_ON.replace("train_epoch(engine, loader)", "train_epoch(engine, other)"), files=_TWO),
        # a line of prose in a text file is no launch
        Valid(_HANDED_ON, files=(("notes.txt", "we ran it with deepspeed on two GPUs: train.py\n"),)),
    )
    invalid = (
        Invalid(_OVERRIDE, lines=(6,), files=_HF_TWO),
        Invalid(_SCRIPT, lines=(6,), files=_TWO),
        # a sampler imported but never used, and streaming only in the docstring: the code shards nothing
        Invalid(
            '"""Tokenization with streaming processing."""\n'
            + _SCRIPT.replace("import DataLoader", "import DataLoader, DistributedSampler"),
            lines=(7,),
            files=_TWO,
        ),
        # initialize in a `try` whose `except` falls back to the plain model: where DeepSpeed runs, it is the engine
        Invalid(
            _SCRIPT.replace(
                "    engine, _, _, _ = deepspeed.initialize(",
                "    try:\n        engine, _, _, _ = deepspeed.initialize(",
            ).replace("config=config)\n", "config=config)\n    except Exception:\n        engine = model\n"),
            lines=(9,),
            files=_TWO,
        ),
        # a project function of another module returns it (an item of its result): reported at the call
        Invalid(_FROM_HELPER, lines=(6,), files=(*_TWO, _LOADERS)),
        # torch's single-process sampler orders the whole dataset on every rank; the loop runs over an iterator
        Invalid(
            _SCRIPT.replace("shuffle=True", "sampler=RandomSampler(dataset)")
            .replace("import DataLoader", "import DataLoader, RandomSampler")
            .replace(
                "        for batch in loader:",
                "        batches = iter(loader)\n        for step, batch in enumerate(batches):",
            ),
            lines=(6,),
            files=_TWO,
        ),
        Invalid(_SCRIPT, lines=(6,), files=(("run.sh", "deepspeed train.py --deepspeed_config ds.json\n"),)),
        # built by a function of the module and looped over where the engine trains
        Invalid(
            "import deepspeed\nimport torch\n\n"
            "def get_loader(data):\n    return torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)\n\n"
            "def main(model, data, config):\n"
            "    engine, _, _, _ = deepspeed.initialize(model=model, config=config)\n"
            "    loader = get_loader(data)\n"
            "    for step, batch in enumerate(loader):\n"
            "        engine.backward(engine(batch))\n"
            "        engine.step()\n",
            lines=(5,),
            files=(("run.sh", "torchrun --nproc_per_node 4 train.py\n"),),
        ),
        # the loop is in a function that gets the loader from its caller; the keywords come from a dict; the
        # launch is a line of a text file of commands
        Invalid(
            _HANDED_ON,
            lines=(11,),
            files=(("cmd.txt", "Train on every GPU:\ndeepspeed train.py --deepspeed_config ds.json\n"),),
        ),
        # a trainer class: the loader in one method, the loop in another
        Invalid(
            "import deepspeed\nfrom torch.utils.data import DataLoader\n\nclass Trainer:\n"
            "    def __init__(self, model, data, config):\n"
            "        self.engine, _, _, _ = deepspeed.initialize(model=model, config=config)\n"
            "        self.train_loader = DataLoader(data, batch_size=4)\n\n"
            "    def fit(self):\n"
            "        for batch in self.train_loader:\n"
            "            self.engine.backward(self.engine(batch))\n"
            "            self.engine.step()\n",
            lines=(7,),
            files=_TWO,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._loaders: list[cst.Call] = []
        self._loops: list[cst.For] = []
        self._calls: list[cst.Call] = []
        self._overrides: list[cst.FunctionDef] = []  # `get_train_dataloader` methods of Trainer subclasses

    def visit_Call(self, node: cst.Call) -> None:
        if self.facts.qualified(node.func) in DATA_LOADERS:
            self._loaders.append(node)
        elif isinstance(node.func, (cst.Name, cst.Attribute)):
            self._calls.append(node)  # a call that may hand a loader to the function looping over it

    def visit_For(self, node: cst.For) -> None:
        self._loops.append(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """A Trainer subclass (a base whose last name ends in `Trainer`) overriding `get_train_dataloader`."""
        if not any((dotted_name(base.value) or "").rpartition(".")[2].endswith("Trainer") for base in node.bases):
            return
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for statement in body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == "get_train_dataloader":
                self._overrides.append(statement)

    def leave_Module(self, original_node: cst.Module) -> None:
        self._trainer_overrides()
        project = self.facts.project
        remote = project.returned_loaders if project is not None else {}
        if (
            not (self._loaders or remote)
            or not self._loops
            or shards_elsewhere(self.context.text.encode())
            or SAMPLER_GIVEN.search(self.context.text.encode())
        ):
            return
        launch = self._several_processes()
        if launch is None:
            return
        training = [loop for loop in self._loops if self._drives_engine(loop)]
        if not training:
            return
        self._remote_loaders(remote, training, launch)
        for loader in self._loaders:
            if not self._unsharded(loader):
                continue
            if any(self._iterates(loop, loader) for loop in training):
                where = launch.launch
                self.report(
                    loader,
                    f"DataLoader without a DistributedSampler: each of the launch's processes trains on the same "
                    f"batches ({where.path}:{where.line}); pass sampler=DistributedSampler(dataset)",
                    related=(Related(where.path, where.line, where.column, "the launch of several processes"),),
                )

    def _remote_loaders(
        self, remote: Mapping[tuple[int, int], tuple[tuple[int | None, Related], ...]], training: list[cst.For],
        launch: LaunchedConfig,
    ) -> None:  # fmt: skip
        """A call of a project function returning a plain DataLoader (`ProjectFacts.returned_loaders`), alone or
        as an item of its result, whose loader a training loop runs over: reported at the call, naming the
        loader."""
        where = launch.launch
        for call in self._calls if remote else ():
            position = self.facts.call_position(call)
            for index, built in remote.get(position, ()) if position is not None else ():
                if os.path.abspath(built.path) == os.path.abspath(self.context.path):
                    continue  # built in this file: reported where it is built
                loop = next((loop for loop in training if self._iterates_item(loop, call, index)), None)
                if loop is None:
                    continue
                callee = built.message.partition("(")[0]
                start = self.context.span(loop)[0]
                self.report(
                    call,
                    f"{callee}() returns a DataLoader without a DistributedSampler ({built.path}:{built.line}): "
                    f"each process of the launch ({where.path}:{where.line}) trains on the same batches",
                    related=(
                        built,
                        Related(self.context.path, start.line, start.column, "the training loop over it"),
                        Related(where.path, where.line, where.column, "the launch of several processes"),
                    ),
                )
                break

    def _iterates_item(self, loop: cst.For, call: cst.Call, index: int | None) -> bool:
        """Whether `loop` runs over the result of `call` (`index` None) or item `index` of it, through a name of
        the same function bound to it (`train_loader, val_loader = get_loaders(...)`)."""
        facts = self.facts
        source = unwrapped_loader(loop.iter)
        if index is None and source is call:
            return True
        if not isinstance(source, cst.Name):
            return False
        binding = facts.binding_at(source.value, facts.scope_at(source), facts.start(source))
        if binding is None or binding.kind is not BindingKind.OTHER:
            return False
        statement = binding.statement
        if not isinstance(statement, cst.Assign) or statement.value is not call:
            return False
        if index is None:
            return binding.element is None
        return binding.element is not None and binding.element[0] == index and binding.element[2] is None

    def _trainer_overrides(self) -> None:
        """A Trainer subclass's `get_train_dataloader` returning a plain DataLoader it never hands to
        `self.accelerator.prepare` (which is what shards the Trainer's own loader per process), under a launch of
        several processes: every rank iterates the whole dataset."""
        if not self._overrides or shards_elsewhere(self.context.text.encode()):
            return
        launch = self._several_processes()
        if launch is None:
            return
        for method in self._overrides:
            nodes = list(own_nodes(method))
            if any(isinstance(n, cst.Attribute) and n.attr.value in ("prepare", "get_train_dataloader") for n in nodes):
                continue  # prepared, or the Trainer's own loader asked for (`super().get_train_dataloader()`)
            for loader in (n for n in nodes if isinstance(n, cst.Call) and n in self._loaders):
                if not self._unsharded(loader) or not self._returned_from(method, loader):
                    continue
                where = launch.launch
                self.report(
                    loader,
                    "the Trainer's get_train_dataloader is overridden with a DataLoader that accelerator.prepare never "
                    f"shards: each of the launch's processes trains on the same batches ({where.path}:{where.line}); "
                    "return self.accelerator.prepare(loader)",
                    related=(Related(where.path, where.line, where.column, "the launch of several processes"),),
                )

    def _returned_from(self, method: cst.FunctionDef, loader: cst.Call) -> bool:
        """`return DataLoader(...)`, or the return of a name bound to it."""
        for returned in own_returns(method):
            value = returned.value
            if value is loader or (isinstance(value, cst.Name) and self._bound_to(value, loader)):
                return True
        return False

    def _bound_to(self, name: cst.Name, loader: cst.Call) -> bool:
        facts = self.facts
        binding = facts.binding_at(name.value, facts.scope_at(name), facts.start(name))
        statement = binding.statement if binding is not None else None
        return isinstance(statement, cst.Assign) and statement.value is loader

    # --- the launch -------------------------------------------------------------------------------------------
    def _several_processes(self) -> LaunchedConfig | None:
        project = self.facts.project
        if project is None:
            return None
        for launch in project.launches:
            if (launch.ranks or 0) > 1 or (launch.ranks_per_node or 0) > 1 or launch.world_source == EVERY_GPU_SOURCE:
                return launch
        return None

    # --- the loader -------------------------------------------------------------------------------------------
    def _unsharded(self, call: cst.Call) -> bool:
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        keywords = self._keywords(call)
        if keywords is None or len(positional) > 3 or (not positional and not keywords):
            return False
        if any(
            keyword in ("sampler", "batch_sampler")
            and not (keyword == "sampler" and self._single_process_sampler(value))
            for keyword, value in keywords
        ):
            return False
        dataset = positional[0].value if positional else None
        for keyword, value in keywords:
            if keyword == "dataset":
                dataset = value
        if dataset is None:
            return False
        text = self.facts.code(dataset)
        bound = self.facts.assigned_value(dataset, call) if isinstance(dataset, cst.Name) else None
        if bound is not None:
            text += " " + self.facts.code(bound)
        return not RANK_WORDS.search(text) and not SYNTHETIC_DATA.search(text)

    def _keywords(self, call: cst.Call) -> list[tuple[str, cst.BaseExpression]] | None:
        """The call's keyword arguments, with those of a `**params` whose name is bound to a dict literal of
        string keys (`DataLoader(dataset, **train_params)`); None when a starred argument cannot be read."""
        keywords: list[tuple[str, cst.BaseExpression]] = []
        for arg in call.args:
            if arg.star == "*":
                return None
            if arg.star == "**":
                bound = self.facts.assigned_value(arg.value, call) if isinstance(arg.value, cst.Name) else None
                if not isinstance(bound, cst.Dict):
                    return None
                for element in bound.elements:
                    if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                        return None
                    key = element.key.evaluated_value
                    if not isinstance(key, str):
                        return None
                    keywords.append((key, element.value))
            elif arg.keyword is not None:
                keywords.append((arg.keyword.value, arg.value))
        return keywords

    def _single_process_sampler(self, sampler: cst.BaseExpression) -> bool:
        """torch's `RandomSampler(data)` or `SequentialSampler(data)` (or a name bound to one): they order the whole
        dataset on every rank."""
        if isinstance(sampler, cst.Name):
            bound = self.facts.assigned_value(sampler, sampler)
            sampler = bound if bound is not None else sampler
        return isinstance(sampler, cst.Call) and self.facts.qualified(sampler.func) in SINGLE_PROCESS_SAMPLERS

    # --- the loops --------------------------------------------------------------------------------------------
    def _drives_engine(self, loop: cst.For) -> bool:
        """Whether the loop's own body calls the engine's `backward`."""
        for node in own_nodes(loop.body):
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "backward"
            ):
                answer = self.facts.role_of(node.func.value, node)
                if answer is not None and answer.role is Role.ENGINE:
                    return True
        return False

    def _iterates(self, loop: cst.For, loader: cst.Call) -> bool:
        """Whether `loop` runs over the loader `loader` builds: the call itself, the name or attribute it is
        bound to (a plain name in the same function), or a call of the module's function that returns it."""
        facts = self.facts
        source = unwrapped_loader(loop.iter)
        if isinstance(source, cst.Name):  # `batches = iter(loader)` then `for batch in enumerate(batches)`
            wrapped = facts.assigned_value(source, source)
            if isinstance(wrapped, cst.Call) and unwrapped_loader(wrapped) is not wrapped:
                source = unwrapped_loader(wrapped)
        if source is loader or self._passed_in(source, source, loader, depth=2):
            return True
        small = facts.small_statement_of_call.get(loader)
        bound = None
        if isinstance(small, cst.Assign) and small.value is loader and len(small.targets) == 1:
            target = dotted_name(small.targets[0].target)
            bound = (small, target) if target is not None else None
        statement = facts.statement_of(loader)
        returned = isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Return) and small.value is loader for small in statement.body
        )
        key = dotted_name(source)
        if bound is not None and key is not None:
            _, name = bound
            if name == key and name.startswith("self."):
                return self._attribute_bound_once(name)
            if name == key and facts.assigned_value(source, source) is loader:  # that binding reaches the loop
                return True
            returned = returned or self._returns_name(loader, name)
        if not returned:
            return False
        function = facts.scope_at(loader).node
        if not isinstance(function, cst.FunctionDef):
            return False
        helper = function.name.value
        if isinstance(source, cst.Call) and dotted_name(source.func) == helper:
            return True
        if key is None or "." in key:
            return False
        value = facts.assigned_value(source, source)
        return isinstance(value, cst.Call) and dotted_name(value.func) == helper

    def _passed_in(self, source: cst.BaseExpression, at: cst.CSTNode, loader: cst.Call, depth: int) -> bool:
        """`source` is a parameter of its function, and a call of that function in this module hands it the
        loader (the call itself, or a name bound to it), or a parameter of the caller's that a call of its own
        hands the loader (`depth` calls up): `train_epoch(loader, engine)` looping over its `loader`."""
        facts = self.facts
        if depth <= 0 or not isinstance(source, cst.Name):
            return False
        scope = facts.scope_at(at)
        binding = facts.binding_at(source.value, scope, facts.start(at))
        function = scope.node
        if binding is None or binding.kind is not BindingKind.PARAMETER or not isinstance(function, cst.FunctionDef):
            return False
        parameters = [param.name.value for param in function.params.params]
        if source.value not in parameters:
            return False  # keyword-only or starred: not matched by position
        index = parameters.index(source.value)
        for call in self._calls:
            name = dotted_name(call.func)
            if name == function.name.value:
                position = index
            elif name == f"self.{function.name.value}" and parameters[:1] == ["self"]:
                position = index - 1
            else:
                continue
            arg = argument(call, position, source.value)
            if arg is None:
                continue
            value = arg.value
            if value is loader or (isinstance(value, cst.Name) and facts.assigned_value(value, call) is loader):
                return True
            if self._passed_in(value, call, loader, depth - 1):
                return True
        return False

    def _attribute_bound_once(self, name: str) -> bool:
        """`self.train_loader` is assigned once in the module (a second assignment, `self.engine, _,
        self.train_loader, _ = deepspeed.initialize(..., training_data=...)`, may replace the loader)."""
        count = 0

        def enter(node: cst.CSTNode) -> bool:
            nonlocal count
            if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
                targets: list[cst.BaseExpression] = [node.target]
                while targets:
                    target = targets.pop()
                    if isinstance(target, (cst.Tuple, cst.List)):
                        targets.extend(element.value for element in target.elements)
                    elif dotted_name(target) == name:
                        count += 1
            return True

        walk(self.context.module, enter, lambda node: None)
        return count == 1

    def _returns_name(self, loader: cst.Call, name: str) -> bool:
        function = self.facts.scope_at(loader).node
        if not isinstance(function, cst.FunctionDef) or "." in name:
            return False
        return any(isinstance(r.value, cst.Name) and r.value.value == name for r in own_returns(function))
