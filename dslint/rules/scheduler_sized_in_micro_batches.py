"""DSL437: a learning-rate scheduler sized in micro-batches, handed to `deepspeed.initialize` under accumulation."""

from __future__ import annotations

import libcst as cst

from dslint.config.tree import Scalar, node_at
from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.config_link import resolve_config
from dslint.project.engine_config import configured_accumulation_steps
from dslint.project.inputs import shown_path
from dslint.script.facts import InitializeCall
from dslint.script.loop import is_accumulation_steps
from dslint.script.walk import children

# The keywords that size a scheduler in steps (torch's OneCycleLR, CosineAnnealingLR, LinearLR, PolynomialLR;
# transformers' get_*_schedule_with_warmup and get_scheduler; DeepSpeed's WarmupDecayLR).
STEP_KEYWORDS = frozenset(
    {"num_training_steps", "total_steps", "steps_per_epoch", "T_max", "total_iters", "total_num_steps"}
)
MAX_DEPTH = 4

_SCRIPT = """
import deepspeed
import torch
def train(model, loader, epochs):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, {sizing}, epochs=epochs)
    engine, _, _, _ = deepspeed.initialize(
        model=model, optimizer=optimizer, lr_scheduler=scheduler, config={config}
    )
"""
_ACCUMULATING = '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8}'
_EVERY_BATCH = '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}'


def _script(sizing: str, config: str = _ACCUMULATING) -> str:
    return _SCRIPT.replace("{sizing}", sizing).replace("{config}", config)


# the accumulation steps from the command line: `--gradient_accumulation_steps` written into the config
_FROM_OPTION = _script("steps_per_epoch=len(loader)", "config").replace(
    "def train(model, loader, epochs):",
    "import argparse\nparser = argparse.ArgumentParser()\n"
    'parser.add_argument("--gradient_accumulation_steps", type=int, default=1)\nargs = parser.parse_args()\n'
    "def train(model, loader, epochs):\n"
    '    config = {"train_micro_batch_size_per_gpu": 2,\n'
    '              "gradient_accumulation_steps": args.gradient_accumulation_steps}',
)
_LAUNCH_16 = ("run.sh", "deepspeed train.py --gradient_accumulation_steps 16\n")
_LAUNCH_1 = ("run_small.sh", "deepspeed train.py --gradient_accumulation_steps 1\n")


class SchedulerSizedInMicroBatches(ScriptRule):
    code = "DSL437"
    slug = "scheduler-sized-in-micro-batches"
    message = "this scheduler counts micro-batches, but the engine steps it once an optimizer step: size it so"
    every = "this scheduler counts micro-batches, but the engine steps it once every"
    severity = Severity.WARNING
    required_tokens = (b"deepspeed", b"initialize", b"lr_scheduler", b"len")
    docs = RuleDocs(
        what="""
            Flags the step count of a learning-rate scheduler handed to `deepspeed.initialize(lr_scheduler=...)`
            (`num_training_steps=`, `total_steps=`, `steps_per_epoch=`, `T_max=`, `total_iters=`,
            `total_num_steps=`) when it counts micro-batches, the length of a data loader or dataset
            (`len(train_loader) * epochs`, through names bound in the same function), with no division anywhere
            in it (by the accumulation steps, or by anything else that may count optimizer steps), and the engine's
            config is known to accumulate gradients
            (`gradient_accumulation_steps` above 1: in a file, a dict, or written from a command-line option that
            every launch of the script gives the same value). The finding names where the steps come from (the
            launches, the config key). A count that cannot be read, or a config that cannot be, is not guessed at.
        """,
        why="""
            The engine steps the scheduler it was given inside `_take_model_step`, only at the gradient
            accumulation boundary (`runtime/engine.py`, DeepSpeed 0.19.8): once every
            `gradient_accumulation_steps` micro-batches. A schedule sized in micro-batches then runs that many
            times too slowly: the warm-up lasts that many times longer, and the decay covers only a fraction of
            its course by the end of training. Size it in optimizer steps:
            `math.ceil(len(loader) / gradient_accumulation_steps) * epochs`.
        """,
        example="""
            scheduler = get_linear_schedule_with_warmup(optimizer, 100, num_training_steps=len(loader) * epochs)
            engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, lr_scheduler=scheduler,
                                              config="ds.json")  # gradient_accumulation_steps: 8
        """,
        use_instead="""
            steps = math.ceil(len(loader) / gradient_accumulation_steps) * epochs
            scheduler = get_linear_schedule_with_warmup(optimizer, 100, num_training_steps=steps)
        """,
    )
    valid = (
        Valid(_script("steps_per_epoch=len(loader)", _EVERY_BATCH)),
        Valid(_script("steps_per_epoch=len(loader) // 8", '{"train_micro_batch_size_per_gpu": 4}')),
        Valid(_script("steps_per_epoch=len(loader) // args.gradient_accumulation_steps")),
        Valid(
            _script("steps_per_epoch=steps").replace("    scheduler =", "    steps = count(loader)\n    scheduler =")
        ),
        Valid(_script("steps_per_epoch=len(loader)", "args.config")),
        Valid(_FROM_OPTION),  # no launch: any value may be given
        Valid(_FROM_OPTION, files=(_LAUNCH_16, _LAUNCH_1)),  # the launches disagree: not known
    )
    invalid = (
        Invalid(_script("steps_per_epoch=len(loader)"), lines=(6,)),
        Invalid(
            _script("steps_per_epoch=per_epoch").replace(
                "    scheduler =", "    per_epoch = len(loader.dataset)\n    scheduler ="
            ),
            lines=(7,),
        ),
        Invalid(_FROM_OPTION, lines=(12,), files=(_LAUNCH_16,)),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = self.facts
        for init in facts.initialize_calls:
            scheduler = init.argument("lr_scheduler")
            if not isinstance(scheduler, cst.Name):
                continue
            built = self._bound_value(scheduler)
            if not isinstance(built, cst.Call):
                continue
            sizes = [a for a in built.args if a.keyword is not None and a.keyword.value in STEP_KEYWORDS]
            counted = [a for a in sizes if self._micro_batches(a.value, 0)]
            if not counted:
                continue
            steps = configured_accumulation_steps(self.context, init.engine)
            if steps is None or steps <= 1:
                continue
            for argument in counted:
                self.report(argument, f"{self.every} {steps}: divide by {steps}", related=self._steps_from(init))

    def _steps_from(self, init: InitializeCall) -> list[Related]:
        """Where the accumulation steps come from when not from this file: the launchers naming the config file,
        and the key in it, or the launches giving the option the script writes into the config."""
        config = resolve_config(self.context, init.engine)
        if config is None:
            return []
        related = list(config.via)
        node = node_at(config.tree, "gradient_accumulation_steps") if config.tree is not None else None
        if isinstance(node, Scalar):
            related.extend(r for r in node.via if isinstance(r, Related))
        if config.path is not None and node is not None:
            related.append(
                Related(shown_path(str(config.path)), node.start.line, node.start.column, "gradient_accumulation_steps")
            )
        return list(dict.fromkeys(related))

    def _bound_value(self, name: cst.BaseExpression) -> cst.BaseExpression | None:
        """The value a name was last given in its own function, before `name` (one assignment)."""
        binding = self.facts.local_binding(name)
        if binding is None:
            return None
        value = binding.value
        if not isinstance(binding.statement, (cst.Assign, cst.AnnAssign)) or not isinstance(value, cst.BaseExpression):
            return None
        return value

    def _micro_batches(self, node: cst.BaseExpression, depth: int) -> bool:
        """A count built from `len(...)` (a loader's or a dataset's length), with nothing in it (or in the names
        it reads, in the same function) that names the accumulation steps or divides (a division by a batch size or
        a literal may already count optimizer steps); a name whose value is not known in the function: no."""
        if depth > MAX_DEPTH:
            return False
        found = False
        for child in _expressions(node):
            if isinstance(child, cst.Call) and isinstance(child.func, cst.Name) and child.func.value == "len":
                found = True
            elif isinstance(child, (cst.Name, cst.Attribute)) and is_accumulation_steps(child):
                return False
            elif isinstance(child, cst.BinaryOperation) and isinstance(child.operator, _DIVISIONS):
                return False  # `len(data) // (batch * world)`, `// 4`: what it counts is not known
        if found:
            return True
        if isinstance(node, cst.BinaryOperation):
            return self._micro_batches(node.left, depth + 1) or self._micro_batches(node.right, depth + 1)
        if isinstance(node, cst.Name):
            value = self._bound_value(node)
            return value is not None and self._micro_batches(value, depth + 1)
        return False


_DIVISIONS = (cst.Divide, cst.FloorDivide)


def _expressions(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children(current))
    return found
