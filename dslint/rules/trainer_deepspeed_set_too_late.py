"""DSL440: `TrainingArguments.deepspeed` assigned after the arguments were built, which the Trainer never applies."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Related, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import is_training_arguments_name
from dslint.project.config_edits import module_index
from dslint.script.hf_models import is_training_arguments, keyword_value
from dslint.script.names import dotted_name

# HfArgumentParser's methods that build the dataclasses from the command line (`sys.argv`).
COMMAND_LINE_PARSES = frozenset({"parse_args_into_dataclasses"})
# ... and from a mapping it is given.
DICT_PARSES = frozenset({"parse_dict"})

_PARSED = """
from transformers import HfArgumentParser, Trainer, TrainingArguments
parser = HfArgumentParser((ModelArguments, TrainingArguments))
model_args, training_args = parser.parse_args_into_dataclasses()
training_args.deepspeed = "ds_config.json"
trainer = Trainer(model=model, args=training_args)
"""

_BUILT_ELSEWHERE = """
from helpers import get_arguments
from transformers import Trainer
args = get_arguments("out")
args.deepspeed = "ds.json"
trainer = Trainer(model=model, args=args)
"""
_HELPER = "import argparse\nfrom transformers import TrainingArguments\ndef get_arguments(path):\n    return {made}\n"


class TrainerDeepspeedSetTooLate(ScriptRule):
    code = "DSL440"
    slug = "trainer-deepspeed-set-too-late"
    message = "TrainingArguments set DeepSpeed up when they were built: this later `deepspeed` is never applied"
    severity = Severity.ERROR
    needs_engine = False
    required_tokens = (b"deepspeed", b"Train")  # a `*Trainer`, or `*TrainingArguments` a function returns
    call_shapes = (Shape(stored=("deepspeed",)),)  # an assignment `X.deepspeed = ...`
    docs = RuleDocs(
        what="""
            Flags `args.deepspeed = ...` (not `None`) where `args` was built, in the same function, without a
            DeepSpeed config: by a `*TrainingArguments(...)` call (or one of TRL's configs) with no
            `deepspeed=` and no `**` mapping, by `HfArgumentParser.parse_args_into_dataclasses()` in a script
            whose every launch the project ships passes no `--deepspeed`, or by `parse_dict` of a dict literal
            without the key; or by a call of a project function that returns the `*TrainingArguments(...)` it
            builds (any of them: they have been through `__post_init__`); and the arguments then go to a
            `*Trainer(args=...)` in that function, or the function returns them.
        """,
        why="""
            transformers reads `deepspeed` once, in `TrainingArguments.__post_init__`: there it builds the
            `HfTrainerDeepSpeedConfig`, the accelerate `DeepSpeedPlugin` the Trainer's Accelerator is made
            with, and sets `ACCELERATE_USE_DEEPSPEED`. A value assigned afterwards is stored and never read:
            the Trainer runs plain data-parallel training, every rank holding the whole model, optimizer
            states and gradients, without the ZeRO stage, offload or precision the config asks for, and
            nothing says so. Give the config when the arguments are built. (Old releases such as transformers
            4.5 read `deepspeed` only when training started, so there a late value still took effect; dslint
            reads no transformers pin and judges by the current behaviour.)
        """,
        example="""
            args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)
            args.deepspeed = "ds_zero3.json"
            trainer = Trainer(model=model, args=args, train_dataset=data)
        """,
        use_instead="""
            args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, deepspeed="ds_zero3.json")
            trainer = Trainer(model=model, args=args, train_dataset=data)
        """,
    )
    valid = (
        # a project function of another module returns something else than Trainer arguments
        Valid(_BUILT_ELSEWHERE, files=(("helpers.py", _HELPER.format(made="argparse.Namespace(output_dir=path)")),)),
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed="ds.json")
            trainer = Trainer(model=model, args=args)
            """
        ),
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments(output_dir="out", **options)
            args.deepspeed = "ds.json"
            trainer = Trainer(model=model, args=args)
            """
        ),
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out")
            args.deepspeed = "ds.json"
            engine = build_engine(args)
            """
        ),
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments(output_dir="out")
            args.deepspeed = None
            trainer = Trainer(model=model, args=args)
            """
        ),
        Valid(_PARSED, files=(("run.sh", "deepspeed train.py --deepspeed ds_config.json\n"),)),
        Valid(_PARSED),
        Valid(_PARSED.replace("parse_args_into_dataclasses()", 'parse_dict({"deepspeed": "a.json", **extra})')),
    )
    invalid = (
        # built with `deepspeed=None` in a function that returns them
        Invalid(
            """
            from transformers import TrainingArguments
            def build_arguments(config):
                args = TrainingArguments(output_dir="out", deepspeed=None)
                if config.use_deepspeed:
                    args.deepspeed = "ds.json"
                return args
            """,
            lines=(6,),
        ),
        # built by a project function of another module
        Invalid(
            _BUILT_ELSEWHERE,
            lines=(5,),
            files=(("helpers.py", _HELPER.format(made="TrainingArguments(output_dir=path)")),),
        ),
        Invalid(
            """
            from transformers import Trainer, TrainingArguments
            def main(model, data):
                args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)
                args.deepspeed = "ds_zero3.json"
                trainer = Trainer(model, args, train_dataset=data)
                trainer.train()
            """,
            lines=(5,),
        ),
        Invalid(
            """
            from trl import SFTConfig, SFTTrainer
            config = SFTConfig(output_dir="out")
            with open("ds.json") as handle:
                config.deepspeed = json.load(handle)
            trainer = SFTTrainer(model=model, args=config)
            """,
            lines=(5,),
        ),
        Invalid(_PARSED, lines=(5,), files=(("run.sh", "deepspeed train.py --output_dir out\n"),)),
        Invalid(_PARSED.replace("parse_args_into_dataclasses()", 'parse_dict({"output_dir": "out"})'), lines=(5,)),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and target.attr.value == "deepspeed"):
            return
        if isinstance(node.value, cst.Name) and node.value.value == "None":
            return
        binding = self.facts.local_binding(target.value)
        if binding is None or not isinstance(binding.statement, cst.Assign):
            return
        built = self._built_without_deepspeed(binding.statement.value, binding.element)
        if built is None:
            return
        if self._given_to_trainer(target, node):
            self.report(node, related=built)
        else:  # reported at the end if the function returns them after this
            self.pending.append((node, target, built))

    def visit_Module(self, node: cst.Module) -> None:
        self.pending: list[tuple[cst.Assign, cst.Attribute, tuple[Related, ...]]] = []
        self.returns: list[cst.Return] = []

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self.pending:
            self.returns.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        for assignment, target, built in self.pending:
            if self._returned(target, assignment):
                self.report(assignment, related=built)

    def _built_without_deepspeed(
        self, value: cst.BaseExpression, element: tuple[int, int, int | None] | None
    ) -> tuple[Related, ...] | None:
        """The launches that show a parse gets no `--deepspeed` (empty for a call that shows it itself), when the
        value is TrainingArguments built without a DeepSpeed config; None when they may hold one."""
        if not isinstance(value, cst.Call):
            return None
        project = self.facts.project
        built = self.facts.call_fact(value, project.built_arguments) if project is not None else None
        if element is None and built is not None:
            return (built,)  # a project function built them: through `__post_init__` already
        if element is None and is_training_arguments(self.context, value):
            given = keyword_value(value, "deepspeed")  # `deepspeed=None` gives none
            if (given is not None and not _is_none(given)) or any(arg.star for arg in value.args):
                return None
            return ()
        func = value.func
        if not isinstance(func, cst.Attribute) or element is None or not self._training_arguments_at(func, element[0]):
            return None
        method = func.attr.value
        if method in DICT_PARSES:
            given = value.args[0].value if value.args else None
            if not isinstance(given, cst.Dict):
                return None
            keys = [
                e.key.evaluated_value
                if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                else None
                for e in given.elements
            ]
            return None if None in keys or "deepspeed" in keys else ()
        if method not in COMMAND_LINE_PARSES or value.args:
            return None
        project = self.facts.project
        launches = project.launches if project is not None else ()
        if not launches or any("deepspeed" in launch.options for launch in launches):
            return None
        return tuple(launch.launch for launch in launches)

    def _training_arguments_at(self, func: cst.Attribute, index: int) -> bool:
        """Whether the parser `func` belongs to (`parser.parse_...`, a parser built by `HfArgumentParser(...)` in
        this file) yields a `*TrainingArguments` at `index` of what the parse returns."""
        parser = self.facts.assigned_value(func.value, func)
        if (
            not isinstance(parser, cst.Call)
            or (dotted_name(parser.func) or "").rsplit(".", 1)[-1] != "HfArgumentParser"
        ):
            return False
        if not parser.args:
            return False
        first = parser.args[0].value
        classes = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
        if not 0 <= index < len(classes):
            return False
        name = dotted_name(classes[index])
        project = self.facts.project
        own = project.arguments_classes if project is not None else frozenset()
        return name is not None and (is_training_arguments_name(name) or name.rsplit(".", 1)[-1] in own)

    def _returned(self, target: cst.Attribute, assignment: cst.Assign) -> bool:
        """The function returns the arguments (`target`'s object) after the assignment: whoever receives them gets
        arguments whose `__post_init__` has run."""
        key = dotted_name(target.value)
        scope = self.facts.scope_at(target)
        after = self.facts.start(assignment)
        return any(
            r.value is not None
            and dotted_name(r.value) == key
            and self.facts.scope_at(r.value) is scope
            and self.facts.start(r.value) > after
            for r in self.returns
        )

    def _given_to_trainer(self, target: cst.Attribute, assignment: cst.Assign) -> bool:
        """A `*Trainer(...)` call after the assignment, in the same function, given the arguments (`target`'s
        object) as `args=` or as its second positional argument."""
        key = dotted_name(target.value)
        scope = self.facts.scope_at(target)
        after = self.facts.start(assignment)
        for call in module_index(self.context.module).calls:
            name = dotted_name(call.func) or ""
            if not name.rsplit(".", 1)[-1].endswith("Trainer") or self.facts.start(call) <= after:
                continue
            if self.facts.scope_at(call) is not scope:
                continue
            given = keyword_value(call, "args")
            positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
            if given is None and len(positional) >= 2:
                given = positional[1]
            if given is not None and dotted_name(given) == key:
                return True
        return False


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
