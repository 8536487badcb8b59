"""DSL478: an optimizer (or schedule) the script builds, handed to `accelerator.prepare` under accelerate's DeepSpeed,
whose config has an `optimizer` (or `scheduler`) section: `prepare` raises."""

from __future__ import annotations

import os

import libcst as cst

from dslint.config.tree import Object
from dslint.diagnostics import Related, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import OPTIMIZER_CALLS, OPTIMIZER_MODULES, SCHEDULE_CALLS, SCHEDULE_MODULES
from dslint.project.accelerate_deepspeed import accelerate_config_files
from dslint.project.inputs import shown_path
from dslint.project.resolved_configs import ResolvedConfig
from dslint.script.devices import reaching_values
from dslint.script.hf_trainers import TrainerNames

_IMPORTS = "import torch\nfrom accelerate import Accelerator, DeepSpeedPlugin\n"
_PREPARE = """
def main(model, loader):
    accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(hf_ds_config="ds.json"))
    optimizer = {optimizer}
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
    return accelerator.prepare(model, optimizer, schedule, loader)
"""
_WITH_OPTIMIZER = '{"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "zero_optimization": {"stage": 2}}\n'
_BOTH = (
    '{"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "scheduler": {"type": "WarmupLR"}, '
    '"zero_optimization": {"stage": 2}}\n'
)


class OptimizerInConfigAndCode(ScriptRule):
    code = "DSL478"
    slug = "optimizer-in-config-and-code"
    message = "accelerate refuses the script's optimizer or schedule beside that section of its DeepSpeed config"
    template = "accelerate's prepare raises: {config} has a{n} {section} section and this is the script's own {section}"
    severity = Severity.ERROR
    needs_engine = False
    required_tokens = (b"prepare", b"Accelerator")
    call_shapes = (Shape(methods=("prepare",), configured=True),)
    docs = RuleDocs(
        what="""
            Flags an argument of `accelerator.prepare(...)` that is an optimizer the script builds (torch's
            `torch.optim.*`, transformers' `AdamW`/`Adafactor`, bitsandbytes' optimizers: a call, or a name every
            assignment reaching it binds to one) where the DeepSpeed config of every way the script runs DeepSpeed
            through accelerate (the `hf_ds_config` file of its `DeepSpeedPlugin`, or the config file of every
            `accelerate launch` of it) has an `optimizer` section; and one that is a learning-rate schedule it
            builds (`torch.optim.lr_scheduler.*`, transformers' `get_*_schedule*` and `get_scheduler`) where those
            configs have a `scheduler` section. Left alone: accelerate's placeholders (`DummyOptim`,
            `DummyScheduler`), objects the code does not show being built, configs that cannot be read, and
            accelerate runs whose DeepSpeed settings are the YAML's or the plugin's own (no sections).
        """,
        why="""
            `Accelerator._prepare_deepspeed` raises "You cannot specify an optimizer in the config file and in the
            code at the same time" (and the same for a scheduler) when the objects handed to `prepare` include a
            real torch optimizer or schedule and the DeepSpeed config has that section: the run stops at `prepare`,
            after the model is loaded. Keep one of the two: drop the config's section (accelerate then hands
            DeepSpeed the script's object), or build `accelerate.utils.DummyOptim(params, lr=...)` /
            `DummyScheduler(optimizer, ...)` in the code so that DeepSpeed builds the config's.
        """,
        example=_IMPORTS + _PREPARE.format(optimizer="torch.optim.AdamW(model.parameters(), lr=1e-4)"),
        use_instead=_IMPORTS
        + "from accelerate.utils import DummyOptim\n"
        + _PREPARE.format(optimizer="DummyOptim(model.parameters(), lr=1e-4)"),
    )
    valid = (
        # the config has no optimizer or scheduler section: the script's own are DeepSpeed's
        Valid(
            _IMPORTS + _PREPARE.format(optimizer="torch.optim.AdamW(model.parameters(), lr=1e-4)"),
            files=(("ds.json", '{"zero_optimization": {"stage": 2}}\n'),),
        ),
        # accelerate's placeholders stand for the config's sections
        Valid(
            _IMPORTS
            + "from accelerate.utils import DummyOptim, DummyScheduler\n"
            + _PREPARE.format(optimizer="DummyOptim(model.parameters(), lr=1e-4)").replace(
                "torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)", "DummyScheduler(optimizer)"
            ),
            files=(("ds.json", _BOTH),),
        ),
        # no DeepSpeed: accelerate wraps the script's objects
        Valid(
            "import torch\nfrom accelerate import Accelerator\n"
            "def main(model, loader):\n"
            "    optimizer = torch.optim.AdamW(model.parameters())\n"
            "    return Accelerator().prepare(model, optimizer, loader)\n"
        ),
    )
    invalid = (
        # an optimizer section: the AdamW is refused; no scheduler section: the StepLR is DeepSpeed's
        Invalid(
            _IMPORTS + _PREPARE.format(optimizer="torch.optim.AdamW(model.parameters(), lr=1e-4)"),
            lines=(8,),
            files=(("ds.json", _WITH_OPTIMIZER),),
        ),
        # the config file of the accelerate launch, both sections
        Invalid(
            """from torch import optim
from transformers import get_linear_schedule_with_warmup
from accelerate import Accelerator
def main(model, loader):
    accelerator = Accelerator()
    model_optim = optim.Adam(model.parameters(), lr=1e-4)
    scheduler = get_linear_schedule_with_warmup(model_optim, 10, 100)
    model, model_optim, scheduler = accelerator.prepare(model, model_optim, scheduler)
""",
            lines=(8, 8),
            files=(
                ("run.sh", "accelerate launch --config_file ds.yaml train.py\n"),
                ("ds.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"),
                ("ds.json", _BOTH),
            ),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.names = TrainerNames(self.context)
        self.prepares: list[cst.Call] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        self.names.consider_assign(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "prepare":
            self.prepares.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        prepares = [call for call in self.prepares if self.names.names_accelerator(call.func.value)]  # type: ignore[attr-defined]
        found = accelerate_config_files(self.context) if prepares else None
        if found is None:
            return
        configs, related = found
        for call in prepares:
            for arg in call.args:
                if arg.keyword is not None or arg.star:
                    continue
                section = self._built(arg.value)
                if section is None or not all(section in config.values for config in configs):
                    continue
                config = configs[0]
                name = os.path.basename(str(config.path)) if config.path is not None else "the config"
                places = [*related, *self._sections(configs, section)]
                message = self.template.format(config=name, n="n" if section == "optimizer" else "", section=section)
                self.report(arg.value, message, related=places)

    def _built(self, value: cst.BaseExpression) -> str | None:
        """ "optimizer" or "scheduler" when `value` is one the script builds: such a call, or a name whose every
        reaching assignment is one of the same kind."""
        if isinstance(value, cst.Call):
            return self._kind(value)
        if not isinstance(value, cst.Name):
            return None
        values = reaching_values(self.context.facts, value) or ()  # None: a binding that is no plain assignment
        kinds = {self._kind(bound) if isinstance(bound, cst.Call) else None for bound in values}
        return kinds.pop() if len(kinds) == 1 else None

    def _kind(self, call: cst.Call) -> str | None:
        qualified = self.context.facts.imports.qualified(call.func)
        if qualified is None:
            return None
        if qualified.startswith(SCHEDULE_MODULES) or qualified in SCHEDULE_CALLS:
            return "scheduler"
        if qualified.startswith(OPTIMIZER_MODULES) or qualified in OPTIMIZER_CALLS:
            return "optimizer"
        return None

    @staticmethod
    def _sections(configs: list[ResolvedConfig], section: str) -> list[Related]:
        """Where each config file writes the section."""
        places: list[Related] = []
        for config in configs:
            entry = config.tree.entry(section) if isinstance(config.tree, Object) and config.path is not None else None
            if entry is not None:
                start = entry.key_start
                places.append(Related(shown_path(str(config.path)), start.line, start.column, section))
        return places
