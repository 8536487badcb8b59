"""DSL457: an `optimizer` or `scheduler` section of a config whose every `initialize` gets a client object instead."""

from __future__ import annotations

from dslint.config.facts import Origin
from dslint.config.tree import Object
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# The sections a client object replaces, and the keyword of `initialize` that hands that object.
SECTIONS = {"optimizer": "optimizer", "scheduler": "lr_scheduler"}
_CONFIG = (
    '{{\n  "train_micro_batch_size_per_gpu": 4,\n  "optimizer": {{\n    "type": "AdamW",\n'
    '    "params": {{"lr": 0.0001, "betas": [0.9, 0.95]}}\n  }}{scheduler}\n}}\n'
)
_SCRIPT = """\
import deepspeed
import torch

def main(args, model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, optimizer=optimizer)
"""
_RUN = ("run.sh", "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n")


class ConfigSectionOverriddenByClient(ConfigRule):
    code = "DSL457"
    slug = "config-section-overridden-by-client"
    message = "this section is never built: initialize is handed its own object, which replaces it"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags the `optimizer` (or `scheduler`) section of a DeepSpeed config file (or of a dict a script builds)
            when every script that hands it to `deepspeed.initialize` also hands `initialize` an optimizer
            (`optimizer=`) or scheduler (`lr_scheduler=`) object it builds itself (`torch.optim.AdamW(...)`, a
            name bound to such a call): the section's type and parameters are never used. Reported at the
            section's key, naming the keyword. Left alone: a config whose reader is not `initialize` (the Hugging
            Face Trainer builds from the section), a callable handed in (`optimizer=lambda params: ...`), and
            configs some reader hands no object. A file is judged over every reader the project index links to it
            (its launches, literal paths), not by one script that names it in an option's default: another script
            may read the same file and build the section.
        """,
        why="""
            `DeepSpeedEngine._configure_optimizer` (DeepSpeed 0.19.8) uses the client optimizer when one is given
            ("Using client Optimizer as basic optimizer") and builds one from the config only when none is; and
            `_configure_lr_scheduler` does the same for the scheduler (`initialize`'s docstring: "This overrides
            any optimizer definition in the DeepSpeed json config"). Nothing warns: the learning rate, betas,
            weight decay or warm-up written in the config are not the ones that train.
        """,
        example="""
            {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "betas": [0.9, 0.95]}}, ...}
            # train.py: deepspeed.initialize(model=model, optimizer=torch.optim.AdamW(model.parameters()), ...)
        """,
        use_instead="""
            # set the optimizer in one place: remove the section, or let initialize build it from the config
            deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
        """,
    )
    valid = (
        Valid(_CONFIG.format(scheduler="")),  # a file alone: its reader is not known
        Valid(
            _CONFIG.format(scheduler=""),
            files=(_RUN, ("train.py", _SCRIPT.replace("optimizer=optimizer", "model_parameters=model.parameters()"))),
        ),
    )
    invalid = (
        Invalid(_CONFIG.format(scheduler=""), lines=(3,), files=(_RUN, ("train.py", _SCRIPT))),
        Invalid(
            "import deepspeed, torch\n"
            'config = {"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "Adam", "params": {"lr": 1e-3}}}\n'
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)\n",
            lines=(2,),
            path="train.py",
        ),
    )

    def check(self) -> None:
        context = self.context
        # a config a launched script picks by its own path is handed to its initialize calls (`config_chosen`)
        if context.origin not in (Origin.INITIALIZE, Origin.UNLINKED) or not context.client_sections:
            return
        for entry in self.entries(self.root):
            keyword = SECTIONS.get(entry.key)
            if keyword is not None and entry.key in context.client_sections and isinstance(entry.value, Object):
                self.report_key(
                    entry,
                    f"this {entry.key} section is never built: every initialize reading it gets {keyword}=, "
                    "which replaces it",
                )
