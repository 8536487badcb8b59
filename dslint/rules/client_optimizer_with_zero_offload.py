"""DSL431: a client torch optimizer handed to `deepspeed.initialize` whose config offloads the optimizer."""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from dslint.config.facts import Origin
from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import FUSED_ADAMS, LIGHTNING_OFFLOAD_STRATEGIES, LIGHTNING_STRATEGY_CLASSES
from dslint.project.config_edits import literal_value
from dslint.project.config_link import resolve_config
from dslint.script.names import dotted_name
from dslint.script.walk import own_returns

# Optimizers DeepSpeed's ZeRO-Offload check refuses (any class but DeepSpeedCPUAdam and DeepSpeedCPULion): the
# plain ones of torch and transformers, named exactly so that a project's own wrapper is never taken for one.
_CLIENT = re.compile(r"^(?:torch\.optim\.[A-Z]\w*|transformers\.(?:optimization\.)?AdamW)$")

_SCRIPT = """\
import deepspeed
import torch
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=CONFIG)
"""
_OFFLOAD = '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}'
_LIGHTNING = """\
import lightning as L
import torch

class Net(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

L.Trainer(accelerator="gpu", devices=4, strategy=STRATEGY).fit(Net())
"""


class ClientOptimizerWithZeroOffload(ScriptRule):
    code = "DSL431"
    slug = "client-optimizer-with-zero-offload"
    message = "ZeRO-Offload refuses a client torch optimizer (ZeRORuntimeException); use DeepSpeedCPUAdam"
    severity = Severity.ERROR
    lightning_template = "{strategy} offloads the optimizer: ZeRO-Offload refuses this one (ZeRORuntimeException)"
    required_tokens = (b"deepspeed", b"initialize", b"optimizer")
    # a Lightning module's optimizer under an offloading strategy of Lightning's (no initialize: Lightning calls it;
    # `"deepspeed_stage_2_offload"`, `DeepSpeedStrategy(offload_optimizer=True)`)
    runs_without_engine_on = ((b"configure_optimizers", b"_offload"), (b"configure_optimizers", b"offload_optimizer"))
    docs = RuleDocs(
        what="""
            Flags the `optimizer=` of a `deepspeed.initialize` call when it is a plain torch optimizer
            (`torch.optim.AdamW(...)`, `transformers.AdamW(...)`, directly, through a name bound to one, or returned
            by every `return` of a function of the module) and the config the call runs with offloads the optimizer
            (`zero_optimization.offload_optimizer` with `"device": "cpu"` or `"nvme"`, or the deprecated
            `"cpu_offload": true`) without `"zero_force_ds_cpu_optimizer": false` (an `optimizer` section of the
            config is not built: the client optimizer overrides it). A config that cannot be read, an optimizer of
            unknown class, DeepSpeed's own CPU optimizers and the Hugging Face Trainer (which sets the switch off
            for its own optimizer) are left alone. Under Lightning, the torch (or fused GPU) optimizer built in a
            `configure_optimizers` of the file is flagged when every `Trainer`/`Fabric` of the file runs a strategy
            that offloads the optimizer (`"deepspeed_stage_2_offload"`, `"deepspeed_stage_3_offload"`,
            `"deepspeed_stage_3_offload_nvme"`, or `DeepSpeedStrategy(offload_optimizer=True)` without a `config` of
            its own) and the file never mentions `zero_force_ds_cpu_optimizer`: the config Lightning builds leaves
            the switch on, and Lightning hands that optimizer to `initialize`.
        """,
        why="""
            `DeepSpeedEngine._configure_optimizer` (`runtime/engine.py`, DeepSpeed 0.19.8) raises
            `ZeRORuntimeException("You are using ZeRO-Offload with a client provided optimizer ...")` when the
            optimizer is offloaded to the CPU or NVMe, the client optimizer is not a `DeepSpeedCPUAdam` or
            `DeepSpeedCPULion`, and `zero_force_ds_cpu_optimizer` is on, which is its default. The run stops
            inside `deepspeed.initialize`. Build `deepspeed.ops.adam.DeepSpeedCPUAdam` instead, or let the
            config's `optimizer` section build it; `"zero_force_ds_cpu_optimizer": false` keeps the torch
            optimizer, stepping slowly on the CPU.
        """,
        example="""
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)  # config: offload_optimizer to cpu
            engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=cfg)
        """,
        use_instead="""
            optimizer = deepspeed.ops.adam.DeepSpeedCPUAdam(model.parameters(), lr=1e-4)
            engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=cfg)
        """,
    )
    valid = (
        Valid(_SCRIPT.replace("CONFIG", '{"zero_optimization": {"stage": 2}}')),
        Valid(_SCRIPT.replace("torch.optim.AdamW", "deepspeed.ops.adam.DeepSpeedCPUAdam").replace("CONFIG", _OFFLOAD)),
        Valid(_SCRIPT.replace("CONFIG", _OFFLOAD.replace('{"train', '{"zero_force_ds_cpu_optimizer": False, "train'))),
        Valid(_SCRIPT.replace("CONFIG", _OFFLOAD.replace('"cpu"', '"none"'))),
        Valid(_SCRIPT.replace("torch.optim.AdamW", "make_optimizer").replace("CONFIG", _OFFLOAD)),
        Valid(_SCRIPT.replace("CONFIG", "args.config")),
        Valid(_LIGHTNING.replace("STRATEGY", '"deepspeed_stage_3"')),  # no offload
        Valid(_LIGHTNING.replace("STRATEGY", "args.strategy")),  # a strategy chosen at run time
        Valid(  # DeepSpeed's own CPU optimizer
            _LIGHTNING.replace("STRATEGY", '"deepspeed_stage_2_offload"')
            .replace("torch.optim.Adam(", "deepspeed.ops.adam.DeepSpeedCPUAdam(")
            .replace("import torch\n", "import deepspeed\nimport torch\n")
        ),
        Valid(  # the switch turned off on the strategy's config
            _LIGHTNING.replace("STRATEGY", "strategy").replace(
                "L.Trainer(",
                "strategy = L.pytorch.strategies.DeepSpeedStrategy(offload_optimizer=True)\n"
                'strategy.config["zero_force_ds_cpu_optimizer"] = False\nL.Trainer(',
            )
        ),
        Valid(  # another Trainer of the file trains without offload: which module goes where is not known
            _LIGHTNING.replace("STRATEGY", '"deepspeed_stage_2_offload"') + 'L.Trainer(strategy="ddp").fit(Net())\n'
        ),
        Valid(_LIGHTNING.replace("STRATEGY", 'DeepSpeedStrategy(offload_optimizer=True, config="ds.json")')),
    )
    invalid = (
        Invalid(_LIGHTNING.replace("STRATEGY", '"deepspeed_stage_3_offload"'), lines=(6,)),
        Invalid(
            _LIGHTNING.replace(
                "import torch\n", "import torch\nfrom lightning.pytorch.strategies import DeepSpeedStrategy\n"
            )
            .replace("return torch.optim.Adam(", "return {'optimizer': torch.optim.SGD(")
            .replace("lr=1e-3)", "lr=1e-3)}")
            .replace("strategy=STRATEGY", "strategy=strategy")
            .replace("L.Trainer(", "strategy = DeepSpeedStrategy(stage=2, offload_optimizer=True)\nL.Trainer("),
            lines=(7,),
        ),
        Invalid(_SCRIPT.replace("CONFIG", _OFFLOAD), lines=(4,)),
        # the config's optimizer section is not built: the client optimizer overrides it, and is refused
        Invalid(
            _SCRIPT.replace("CONFIG", _OFFLOAD.replace('{"train', '{"optimizer": {"type": "Adam"}, "train')), lines=(4,)
        ),
        # an optimizer factory of the module
        Invalid(
            _SCRIPT.replace("CONFIG", _OFFLOAD).replace(
                "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)",
                "def make(model):\n    return torch.optim.AdamW(model.parameters(), lr=1e-4)\noptimizer = make(model)",
            ),
            lines=(6,),
        ),
        Invalid(
            _SCRIPT.replace("CONFIG", '{"zero_optimization": {"stage": 2, "cpu_offload": True}}'),
            lines=(4,),
        ),
        Invalid(
            "import deepspeed\nfrom torch.optim import SGD\n"
            "engine, *_ = deepspeed.initialize(\n"
            f"    model=model, optimizer=SGD(model.parameters(), lr=0.1), config={_OFFLOAD}\n)\n",
            lines=(4,),
        ),
        Invalid(
            _SCRIPT.replace("CONFIG", '"ds.json"'),
            lines=(4,),
            files=(("ds.json", _OFFLOAD.replace('"cpu"', '"nvme", "nvme_path": "/nvme"')),),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.configuring and _refused(self.facts.qualified(node.func)):
            self.refused.append(node)
        if (dotted_name(node.func) or "").rpartition(".")[2] in ("Trainer", "Fabric"):
            chosen = next((a.value for a in node.args if a.keyword and a.keyword.value == "strategy"), None)
            self.strategies.append(self._offloading(chosen, node) if chosen is not None else None)
        init = self.facts.initialize_call_for(node)
        if init is None:
            return
        argument = init.argument("optimizer")
        if argument is None or not self._client_optimizer(argument, node):
            return
        config = resolve_config(self.context, init.engine)
        if config is None or config.origin is not Origin.INITIALIZE or not _offloads_to_cpu(config.values):
            return
        self.report(argument, self.message + config.evidence())

    def visit_Module(self, node: cst.Module) -> None:
        # the module's own functions, by name (an optimizer factory: `def create_optimizer(...): return AdamW(...)`)
        self._factories = {s.name.value: s for s in node.body if isinstance(s, cst.FunctionDef)}
        self.strategies: list[str | None] = []  # each Lightning Trainer/Fabric's offloading strategy, or None
        self.refused: list[cst.Call] = []  # client optimizers built in a `configure_optimizers`
        self.configuring = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.configuring += node.name.value == "configure_optimizers"

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.configuring -= original_node.name.value == "configure_optimizers"

    def leave_Module(self, original_node: cst.Module) -> None:
        """A Lightning module's optimizer under offloading strategies of Lightning's, every one the file runs
        (a Trainer without one, or with one chosen at run time, may be the one that trains the module)."""
        if not self.strategies or None in self.strategies or "zero_force_ds_cpu_optimizer" in self.context.text:
            return
        message = self.lightning_template.format(strategy=self.strategies[0])
        for call in self.refused:
            self.report(call, message)

    def _offloading(self, chosen: cst.BaseExpression, at: cst.Call, depth: int = 0) -> str | None:
        """How the strategy offloads the optimizer (its registered name, or `DeepSpeedStrategy(...)`), or None."""
        if isinstance(chosen, cst.SimpleString) and chosen.evaluated_value in LIGHTNING_OFFLOAD_STRATEGIES:
            return f'Lightning\'s "{chosen.evaluated_value}"'
        if isinstance(chosen, cst.Name) and depth == 0:
            bound = self.facts.assigned_value(chosen, at)
            return self._offloading(bound, at, 1) if bound is not None else None
        if not isinstance(chosen, cst.Call) or (chosen.args and chosen.args[0].keyword is None):
            return None
        name = (dotted_name(chosen.func) or "").rpartition(".")[2]
        keywords = {a.keyword.value: literal_value(a.value) for a in chosen.args if a.keyword is not None}
        if (
            name not in LIGHTNING_STRATEGY_CLASSES
            or "config" in keywords
            or keywords.get("offload_optimizer") is not True
        ):
            return None
        return f"{name}(offload_optimizer=True)" if keywords.get("zero_optimization") is not False else None

    def _client_optimizer(self, argument: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool:
        """A plain torch optimizer: built here, bound to a name, or returned by every `return` of a function of
        this module (`optimizer = create_optimizer(model, args)`)."""
        value: cst.BaseExpression | None = argument
        if isinstance(argument, (cst.Name, cst.Attribute)):
            value = self.facts.assigned_value(argument, at)
        if not isinstance(value, cst.Call):
            return False
        qualified = self.facts.qualified(value.func)
        if qualified is not None and _CLIENT.match(qualified) is not None:
            return True
        factory = self._factories.get(value.func.value) if isinstance(value.func, cst.Name) and depth < 2 else None
        returns = [r.value for r in own_returns(factory)] if factory is not None else []
        return bool(returns) and all(r is not None and self._client_optimizer(r, r, depth + 1) for r in returns)


def _offloads_to_cpu(values: Any) -> bool:
    """The engine's `zero_use_cpu_optimizer()` with `zero_force_ds_cpu_optimizer` on, read from the config (its
    `optimizer` section, if any, is not built: the client optimizer given to `initialize` overrides it)."""
    if not isinstance(values, dict):
        return False
    if values.get("zero_force_ds_cpu_optimizer", True) is not True:
        return False
    zero = values.get("zero_optimization")
    if not isinstance(zero, dict):
        return False
    offload = zero.get("offload_optimizer")
    if isinstance(offload, dict):
        return offload.get("device") in ("cpu", "nvme")
    return offload is None and zero.get("cpu_offload") is True


def _refused(qualified: str | None) -> bool:
    return qualified is not None and (_CLIENT.match(qualified) is not None or qualified in FUSED_ADAMS)
