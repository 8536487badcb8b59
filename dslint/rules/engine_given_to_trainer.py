"""DSL467: the engine `deepspeed.initialize` returned is handed to a Hugging Face Trainer as its model."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import is_trainer_class_name
from dslint.project.evidence import evidence
from dslint.script.facts import Role

_SCRIPT = """\
import deepspeed
from transformers import Trainer, TrainingArguments

def main(args, model, dataset):
    engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    GIVE
    trainer.train()
"""


class EngineGivenToTrainer(ScriptRule):
    code = "DSL467"
    slug = "engine-given-to-trainer"
    message = "the DeepSpeed engine given to a Trainer as its model: give it the model and the config (deepspeed=)"
    severity = Severity.ERROR
    required_tokens = (b"deepspeed", b"initialize", b"Trainer")
    docs = RuleDocs(
        what="""
            Flags a Hugging Face or TRL `*Trainer(...)` (a class of the file deriving from one, or a project's
            `*Trainer` class called with `args=` and a dataset, collator or tokenizer keyword) whose model,
            `model=` or the first positional argument, is the engine `deepspeed.initialize` returned, in this
            function or from another function or module as the project model sees it (the finding names where
            it was created).
        """,
        why="""
            The Trainer runs DeepSpeed itself, from its arguments' `deepspeed=` config: it calls
            `deepspeed.initialize` on the model it is given (transformers' `deepspeed_init`), so an engine there is
            wrapped in a second engine. Without a config it trains the engine as a plain module: its own
            optimizer over the engine's parameters, `loss.backward()` and DDP, none of the engine's
            `backward`/`step` (loss scaling, gradient accumulation, the ZeRO optimizer the first `initialize`
            built), while the engine's optimizer never steps.
        """,
        example="""
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
            trainer = Trainer(model=engine, args=TrainingArguments(output_dir="out"), train_dataset=data)
        """,
        use_instead="""
            args = TrainingArguments(output_dir="out", deepspeed="ds_config.json")
            trainer = Trainer(model=model, args=args, train_dataset=data)
        """,
    )
    valid = (
        Valid(_SCRIPT.replace("GIVE", "trainer = Trainer(model=model, args=TrainingArguments(output_dir='out'))")),
        # the engine's module, unwrapped: a plain model again (the engine's optimizer state aside)
        Valid(_SCRIPT.replace("GIVE", "trainer = Trainer(model=engine.module, args=TrainingArguments('out'))")),
    )
    invalid = (
        Invalid(
            _SCRIPT.replace("GIVE", "trainer = Trainer(model=engine, args=TrainingArguments(output_dir='out'))"),
            lines=(6,),
        ),
        Invalid(
            _SCRIPT.replace(
                "GIVE",
                "from project_trainer import CPMTrainer\n"
                "    trainer = CPMTrainer(model=engine, args=TrainingArguments('out'), train_dataset=dataset)",
            ),
            lines=(7,),
        ),
        Invalid(
            _SCRIPT.replace("GIVE", "trainer = MyTrainer(engine, TrainingArguments(output_dir='out'))")
            + "\nclass MyTrainer(Trainer):\n    pass\n",
            lines=(6,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.local_trainers = {
            s.name.value
            for s in node.body
            if isinstance(s, cst.ClassDef)
            and any(is_trainer_class_name(self.facts.qualified(base.value) or "") for base in s.bases)
        }
        if self.facts.project is not None:  # the project's own Trainer classes it imports
            self.local_trainers |= self.facts.project.trainer_classes

    def visit_Call(self, node: cst.Call) -> None:
        name = self.facts.qualified(node.func) or ""
        local = isinstance(node.func, cst.Name) and node.func.value in self.local_trainers
        if not local and not is_trainer_class_name(name) and not _trainer_shaped(node, name):
            return
        given = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "model"), None)
        if given is None and node.args and node.args[0].keyword is None and not node.args[0].star:
            given = node.args[0].value
        answer = self.facts.role_of(given, at=node) if given is not None else None
        if answer is None or answer.role is not Role.ENGINE:
            return
        found = evidence(self.context, answer.engine)
        self.report(node, self.message + found.suffix, related=found.related)


# the keywords only a Hugging Face Trainer takes beside `args=` (Lightning's `Trainer` takes its model in `fit`)
_TRAINER_KEYWORDS = frozenset({"train_dataset", "eval_dataset", "data_collator", "tokenizer", "processing_class"})


def _trainer_shaped(call: cst.Call, name: str) -> bool:
    """A `*Trainer` class of the project (imported from another module) called as the Hugging Face Trainer is:
    with `args=` and one of its dataset, collator or tokenizer keywords."""
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    return name.rsplit(".", 1)[-1].endswith("Trainer") and "args" in keywords and bool(keywords & _TRAINER_KEYWORDS)
