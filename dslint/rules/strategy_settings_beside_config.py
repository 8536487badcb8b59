"""DSL471: Lightning's `DeepSpeedStrategy(config=..., offload_optimizer=True)`: keyword settings dropped for the
config."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from dslint.config.tree import node_at
from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import LIGHTNING_STRATEGY_CLASSES
from dslint.project.config_link import resolve_config_expression
from dslint.project.inputs import shown_path
from dslint.project.resolved_configs import ResolvedConfig
from dslint.script.names import dotted_name

_OFFLOAD_OFF = (None, "none")


def _offloaded(section: str) -> Callable[[ResolvedConfig, Any], bool]:
    def kept(config: ResolvedConfig, value: Any) -> bool:
        block = config.get("zero_optimization", section)
        device = block.get("device", "cpu") if isinstance(block, dict) else block
        return (block is not None and device not in _OFFLOAD_OFF) == bool(value)

    return kept


def _activation(key: str) -> Callable[[ResolvedConfig, Any], bool]:
    def kept(config: ResolvedConfig, value: Any) -> bool:
        return bool(config.get("activation_checkpointing", key)) == bool(value)

    return kept


def _stage(config: ResolvedConfig, value: Any) -> bool:
    return config.zero_stage is None or config.zero_stage == value


# The keyword settings DeepSpeedStrategy turns into a config only when it is given none (`_create_default_config`),
# each with what says the config does the same anyway (then nothing is lost), and the config key to write instead.
SETTINGS: dict[str, tuple[Callable[[ResolvedConfig, Any], bool], str]] = {
    "stage": (_stage, "zero_optimization.stage"),
    "offload_optimizer": (_offloaded("offload_optimizer"), "zero_optimization.offload_optimizer"),
    "offload_parameters": (_offloaded("offload_param"), "zero_optimization.offload_param"),
    "partition_activations": (_activation("partition_activations"), "activation_checkpointing.partition_activations"),
    "cpu_checkpointing": (_activation("cpu_checkpointing"), "activation_checkpointing.cpu_checkpointing"),
    "contiguous_memory_optimization": (
        _activation("contiguous_memory_optimization"),
        "activation_checkpointing.contiguous_memory_optimization",
    ),
}

_Z1 = '{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1}}'
_Z2_OFFLOAD = '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}'


class StrategySettingsBesideConfig(ScriptRule):
    code = "DSL471"
    slug = "strategy-settings-beside-config"
    message = "DeepSpeedStrategy drops this setting when it is given a config"
    severity = Severity.WARNING
    needs_engine = False
    required_tokens = (b"DeepSpeedStrategy", b"config")
    alternative_tokens = ((b"DeepSpeedPlugin", b"config"),)
    docs = RuleDocs(
        what="""
            Flags a keyword setting of PyTorch Lightning's `DeepSpeedStrategy` (or the older `DeepSpeedPlugin`)
            that the strategy builds a config from, `stage`, `offload_optimizer`, `offload_parameters`,
            `partition_activations`, `cpu_checkpointing`, `contiguous_memory_optimization`, given beside a
            `config=` the strategy reads instead, when that config does not already say the same (a config that
            cannot be read is left alone, and so is a setting that is not a literal).
        """,
        why="""
            `DeepSpeedStrategy.__init__` (Lightning 2.5, `pytorch/strategies/deepspeed.py`, and the same in
            Fabric and in PyTorch Lightning 1.x) loads `config` and calls `_create_default_config(stage=...,
            offload_optimizer=..., ...)` only when there is none: every such keyword beside a config is dropped
            without a word. `DeepSpeedStrategy(config="ds_stage1.json", offload_optimizer=True)` runs stage 1
            with the optimizer on the GPU, and the memory the offload was meant to save is not saved.
        """,
        example="""
            strategy = DeepSpeedStrategy(config="ds_stage1.json", offload_optimizer=True)
        """,
        use_instead="""
            strategy = DeepSpeedStrategy(config="ds_stage1_offload.json")  # offload_optimizer in the config
        """,
    )
    valid = (
        Valid(
            "from lightning.pytorch.strategies import DeepSpeedStrategy\n"
            "strategy = DeepSpeedStrategy(stage=2, offload_optimizer=True)\n"
        ),
        Valid(
            "from lightning.pytorch.strategies import DeepSpeedStrategy\n"
            f"strategy = DeepSpeedStrategy(config={_Z2_OFFLOAD}, stage=2, offload_optimizer=True)\n"
        ),
        Valid(
            "from lightning.pytorch.strategies import DeepSpeedStrategy\n"
            "strategy = DeepSpeedStrategy(config=args.ds_config, offload_optimizer=True)\n"
        ),
        Valid(
            "from lightning.pytorch.strategies import DeepSpeedStrategy\n"
            f"strategy = DeepSpeedStrategy(config={_Z1}, offload_optimizer=args.offload)\n"
        ),
    )
    invalid = (
        Invalid(
            "from lightning.pytorch.strategies import DeepSpeedStrategy\n"
            f"strategy = DeepSpeedStrategy(config={_Z1}, offload_optimizer=True)\n",
            lines=(2,),
        ),
        Invalid(
            "import pytorch_lightning as pl\n"
            "from pytorch_lightning.strategies import DeepSpeedStrategy\n"
            f"CONFIG = {_Z1}\n"
            "trainer = pl.Trainer(strategy=DeepSpeedStrategy(config=CONFIG, stage=3, cpu_checkpointing=True))\n",
            lines=(4, 4),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func)
        if name is None or name.rsplit(".", 1)[-1] not in LIGHTNING_STRATEGY_CLASSES:
            return
        keywords = {arg.keyword.value: arg for arg in node.args if arg.keyword is not None}
        given = keywords.get("config")
        settings = [arg for key, arg in keywords.items() if key in SETTINGS]
        if given is None or not settings or (isinstance(given.value, cst.Name) and given.value.value == "None"):
            return
        config = resolve_config_expression(self.context, given.value)
        if config is None:
            return
        for arg in settings:
            assert arg.keyword is not None
            value = _literal(arg.value)
            if value is None:
                continue
            same, key = SETTINGS[arg.keyword.value]
            if same(config, value):
                continue
            written = self.facts.code(arg.value)
            place = _place(config, key)
            self.report(
                arg,
                f"DeepSpeedStrategy drops {arg.keyword.value}={written} beside config=; set {key} there"
                + (f" ({place.path}:{place.line})" if place is not None else ""),
                related=[place] if place is not None else [],
            )


def _place(config: ResolvedConfig, key: str) -> Related | None:
    """Where a config file the strategy reads says otherwise (the key, else its section, else the file's top): the
    fact the finding rests on, named when it lives in another file."""
    if config.path is None or config.tree is None:
        return None
    parts = key.split(".")
    node = node_at(config.tree, *parts) or node_at(config.tree, parts[0])
    line, column = (node.start.line, node.start.column) if node is not None else (1, 1)
    return Related(shown_path(str(config.path)), line, column, key)


def _literal(value: cst.BaseExpression) -> Any:
    if isinstance(value, cst.Integer):
        return int(value.value)
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    return None
