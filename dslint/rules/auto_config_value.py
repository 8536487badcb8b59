"""DSL405: `"auto"` values, which only the Hugging Face Trainer and accelerate fill in."""

from __future__ import annotations

import os
from collections.abc import Iterator

from dslint.config.facts import Origin, autotuning_enabled, batch_number, is_auto, zero_stage
from dslint.config.key_edits import remove_entry
from dslint.config.tree import Array, Entry, Node, Object, to_python
from dslint.diagnostics import Applicability, Fix, Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.config_readers import PATH_SEPARATOR
from dslint.project.folder_readers import PRESUMED

BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")


def auto_entries(node: Node, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Entry]]:
    if isinstance(node, Object):
        for entry in node.last_entries():
            if is_auto(entry.value):
                yield (*path, entry.key), entry
            else:
                yield from auto_entries(entry.value, (*path, entry.key))
    elif isinstance(node, Array):
        for item in node.items:
            yield from auto_entries(item, path)


class AutoConfigValue(ConfigRule):
    code = "DSL405"
    slug = "auto-config-value"
    message = '"auto" is filled in by the HF Trainer and accelerate, not by deepspeed.initialize; write the value'
    severity = Severity.ERROR
    fixable = True
    docs = RuleDocs(
        what="""
            Flags `"auto"` values in a config that goes straight to `deepspeed.initialize`, where dslint sees the link:
            a dict or file the script passes to `initialize`, a file a launcher names with an option whose value the
            script carries into `initialize` (`config=args.ds_config`, or `args=` for `--deepspeed_config`, which
            DeepSpeed reads itself), a file opened by a literal path and handed to `initialize`, a dict a project
            function returns to an `initialize` call elsewhere (less the keys the caller writes into it before the
            call); a section bound to a name holding a dict literal (`"zero_optimization": zero_opt`) is read as that
            literal, with the writes into the name. A config file nothing names is read as the `initialize(args=...)`
            of the scripts beside it (DeepSpeed opens `--deepspeed_config` itself) when that is the only way its folder
            reads a config: no initialize there is given a config of its own, no script there uses the Hugging Face
            integrations, accelerate or Lightning; the finding names that initialize. Any other config file whose
            reader dslint cannot determine is not reported at all: a JSON file nothing names, one whose name is joined
            to a folder or looked up in a table in code, one a launcher hands to a script whose use of the option
            dslint does not follow (into another module, say).
            Under the Hugging Face Trainer (`TrainingArguments(deepspeed=...)`, also reached through the option's value:
            `TrainingArguments(deepspeed=args.ds_config)`, an `HfArgumentParser` dataclass field) and under accelerate
            (`DeepSpeedPlugin(hf_ds_config=...)`, `Accelerator(deepspeed_plugin=...)`, an accelerate YAML's
            `deepspeed_config_file:`) `"auto"` is the convention and nothing is reported; nor with `"autotuning":
            {"enabled": true}`, whose autotuner fills `"auto"` values itself. A value that the script replaces in code
            before `initialize` is not reported: in a dict literal, and in a file the script loads (named by a launcher
            option, `open(args.x)`, or opened by a literal path, `open("ds_config.json")`), whether written at the top
            (`cfg["train_batch_size"] = n`), nested (`cfg["zero_optimization"]["stage"] = 3`) or through `update`
            (`cfg.update({...})`, `cfg["bf16"].update({...})`); a write under an `if` whose test does not read the dict
            (`if "llama" in args.model:`) replaces the value only when every arm, an `else` too, writes it (a test of
            the value itself, `if cfg.get("lr") == "auto":`, replaces what it finds). Nor is one in the
            `optimizer` (or `scheduler`) section of a config every `deepspeed.initialize` of its script hands a
            client optimizer (or `lr_scheduler`) the script builds: DeepSpeed then never builds that section.
            An `"auto"` inside a section written `"enabled": false` is never read and is not reported, nor is a
            `zero_optimization.stage3_*` one of a config whose ZeRO stage is known to be below 3. A launched
            script that does not use the option itself but imports a project module (to three levels) that opens
            `<x>.<option>`
            (`self.args.deepspeed_config`), loads it and hands the dict to `initialize` links the file too; the finding
            names that module.

            accelerate fills fewer keys than the Trainer: from its plugin and launcher settings
            `gradient_accumulation_steps`, `gradient_clipping`, `zero_optimization.stage`, the offload devices
            and NVMe paths, `stage3_gather_16bit_weights_on_model_save`, `fp16.enabled` and `bf16.enabled`; in
            `prepare`, `train_micro_batch_size_per_gpu` (from the data loader) and `train_batch_size`, the three
            hidden-size bucket keys (`reduce_bucket_size`, `stage3_prefetch_bucket_size`,
            `stage3_param_persistence_threshold`, from `model.config`), the optimizer's `lr` and `weight_decay`
            only with its `DummyOptim`, the scheduler's `warmup_min_lr`, `warmup_max_lr`, `warmup_num_steps` and
            `total_num_steps` only with its `DummyScheduler`. Any other `"auto"` makes accelerate's `prepare`
            raise a ValueError ("not found in kwargs") unless a Trainer filled it first: DSL464 reports an
            `"auto"` that neither fills, in a config they read.
        """,
        why="""
            `"auto"` is a convention of the Hugging Face integrations: the Trainer (and accelerate, for its keys)
            replaces it with its own values before DeepSpeed sees the config. DeepSpeed itself drops `"auto"`
            silently inside the sections it validates (`runtime/config_utils.py`, strict=False), so the default is used:
            `"stage": "auto"` means ZeRO off, `"enabled": "auto"` means fp16 off. At the top level it is kept
            as a string and fails: `"train_batch_size": "auto"` raises a `TypeError` at start-up, an optimizer
            `"lr": "auto"` fails when the optimizer is built.
        """,
        example="""
            engine, _, _, _ = deepspeed.initialize(
                model=model, config={"train_batch_size": 32, "zero_optimization": {"stage": "auto"}}
            )
        """,
        use_instead="""
            engine, _, _, _ = deepspeed.initialize(
                model=model, config={"train_batch_size": 32, "zero_optimization": {"stage": 2}}
            )
        """,
        fix_safety="""
            Only where a value can be derived, and only in a config that `deepspeed.initialize` reads: one of
            `train_batch_size`, `train_micro_batch_size_per_gpu` and `gradient_accumulation_steps` set to `"auto"`
            while the other two are numbers. The fix removes the `"auto"` entry, and DeepSpeed derives it from
            the other two and the data-parallel size (`train_batch_size = micro batch x accumulation steps x
            ranks`), the value the Hugging Face Trainer would have written. Unsafe, since the run changes (it
            failed at start-up before). Every other `"auto"` (a ZeRO stage, a learning rate, a bucket size)
            needs a value that only the user, or the Trainer's own arguments, know: no fix.
        """,
    )
    valid = (
        # ZeRO-3 settings of a stage-2 config are never read: "auto" there changes nothing
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 2, "stage3_prefetch_bucket_size": "auto"}}
            engine, *_ = deepspeed.initialize(model=model, config=config)
            """,
            path="train.py",
        ),
        Valid('{"train_batch_size": 8, "zero_optimization": {"stage": 2}}\n'),
        # the optimizer and scheduler sections are never built: initialize gets client objects the script builds
        Valid(
            '{\n  "train_batch_size": 8,\n  "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},\n'
            '  "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": "auto"}}\n}\n',
            files=(
                ("run.sh", "deepspeed train.py --deepspeed_config ds_config.json\n"),
                (
                    "train.py",
                    """
                    import argparse
                    import deepspeed
                    import torch
                    parser = deepspeed.add_config_arguments(argparse.ArgumentParser())
                    args = parser.parse_args()
                    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                    engine, optimizer, _, _ = deepspeed.initialize(
                        args=args, model=model, optimizer=optimizer, lr_scheduler=make_schedule(optimizer)
                    )
                    """,
                ),
            ),
        ),
        Valid(
            """
            import deepspeed, torch
            config = {"train_batch_size": 16, "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}
            engine, *_ = deepspeed.initialize(model=model, optimizer=torch.optim.SGD(params, lr=0.1), config=config)
            """,
            path="train.py",
        ),
        # a file nothing names: its reader is not known (it may be a Trainer's or accelerate's)
        Valid('{\n  "train_batch_size": "auto",\n  "zero_optimization": {"stage": "auto"}\n}\n'),
        Valid(
            '{\n  "train_batch_size": "auto",\n  "zero_optimization": {"stage": 2}\n}\n',
            files=(
                ("run.sh", "deepspeed train.py --ds_config ds_config.json\n"),
                (
                    "train.py",
                    """
                    import argparse
                    from transformers import TrainingArguments
                    parser = argparse.ArgumentParser()
                    parser.add_argument("--ds_config")
                    args = parser.parse_args()
                    training_args = TrainingArguments(output_dir="out", deepspeed=args.ds_config)
                    """,
                ),
            ),
        ),
        Valid(
            """
            from transformers import TrainingArguments
            ds = {"train_batch_size": "auto", "zero_optimization": {"stage": "auto"}}
            args = TrainingArguments(output_dir="out", deepspeed=ds)
            """,
            path="train.py",
        ),
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 16, "fp16": {"enabled": False, "loss_scale": "auto"}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
            path="train.py",
        ),
        Valid(
            '{\n  "train_batch_size": 16,\n  "bf16": {"enabled": "auto"},\n'
            '  "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}\n}\n',
            files=(
                ("run.sh", "deepspeed train.py --ds_config ds_config.json\n"),
                (
                    "train.py",
                    """
                    import argparse
                    import json
                    import deepspeed
                    parser = argparse.ArgumentParser()
                    parser.add_argument("--ds_config")
                    parser.add_argument("--model")
                    args = parser.parse_args()
                    with open(args.ds_config) as handle:
                        settings = json.load(handle)
                    if "small" in args.model:
                        settings["bf16"]["enabled"] = False
                    else:
                        settings["bf16"]["enabled"] = True
                    if settings["optimizer"]["params"].get("lr") == "auto":
                        settings["optimizer"]["params"]["lr"] = 1e-4
                    engine, _, _, _ = deepspeed.initialize(model=model, config=settings)
                    """,
                ),
            ),
        ),
        Valid(
            """
            import deepspeed
            zero = {"stage": 2, "reduce_bucket_size": "auto"}
            config = {"train_batch_size": 16, "zero_optimization": zero}
            zero["reduce_bucket_size"] = 5e8
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
            path="train.py",
        ),
        Valid(
            """
            def zero_section(stage):
                section = {"stage": stage, "reduce_bucket_size": "auto"}
                return {"train_batch_size": "auto", "zero_optimization": section}
            """,
            path="ds_helpers.py",
            files=(
                (
                    "train.py",
                    """
                    from transformers import TrainingArguments
                    from ds_helpers import zero_section
                    config = zero_section(3)
                    args = TrainingArguments(output_dir="out", deepspeed=config)
                    """,
                ),
            ),
        ),
        Valid(
            """
            def build_config():
                return {"train_batch_size": "auto", "bf16": {"enabled": "auto"}}
            """,
            path="ds_helpers.py",
            files=(
                (
                    "train.py",
                    """
                    from transformers import TrainingArguments
                    from ds_helpers import build_config
                    def main():
                        config = build_config()
                        args = TrainingArguments(output_dir="out", deepspeed=config)
                        config, reference = load_other()
                        return args, config, reference
                    """,
                ),
            ),
        ),
        Valid(
            """
            def build_config():
                return {"train_batch_size": 16, "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}
            """,
            path="ds_helpers.py",
            files=(
                (
                    "train.py",
                    """
                    import deepspeed
                    from ds_helpers import build_config
                    def main(model, hidden):
                        config = build_config()
                        config["zero_optimization"]["reduce_bucket_size"] = hidden * hidden
                        return deepspeed.initialize(model=model, config=config)
                    """,
                ),
            ),
        ),
    )
    invalid = (
        # a client optimizer that may be None (bound to None on one path): the config's section may be built
        Invalid(
            """
            import deepspeed, torch
            config = {"train_batch_size": 16, "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}
            optimizer = None
            if args.own_optimizer:
                optimizer = torch.optim.SGD(params, lr=0.1)
            engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
            """,
            lines=(3,),
            path="train.py",
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}\n}\n',
            lines=(3,),
            files=(
                ("run.sh", "deepspeed main.py --deepspeed_config ds_config.json\n"),
                ("main.py", "import argparse\nfrom learner import Learner\nLearner(argparse.Namespace()).run()\n"),
                (
                    "learner.py",
                    """
                    import json
                    import deepspeed
                    class Learner:
                        def __init__(self, options):
                            self.options = options
                        def run(self):
                            with open(self.options.deepspeed_config) as handle:
                                settings = json.load(handle)
                            deepspeed.initialize(model=None, config=settings)
                    """,
                ),
            ),
        ),
        Invalid(
            '{\n  "train_batch_size": "auto",\n  "zero_optimization": {"stage": "auto"}\n}\n',
            lines=(2, 3),
            files=(
                ("run.sh", "deepspeed train.py --deepspeed_config ds_config.json\n"),
                (
                    "train.py",
                    """
                    import argparse
                    import deepspeed
                    parser = argparse.ArgumentParser()
                    parser = deepspeed.add_config_arguments(parser)
                    args = parser.parse_args()
                    engine, _, _, _ = deepspeed.initialize(args=args, model=model)
                    """,
                ),
            ),
        ),
        Invalid(
            """
            import deepspeed
            config = {
                "train_batch_size": 16,
                "zero_optimization": {"stage": "auto"},
                "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
            lines=(5, 6),
            path="train.py",
        ),
        Invalid(
            """
            import deepspeed
            config = {
                "train_batch_size": "auto",
                "train_micro_batch_size_per_gpu": 4,
                "gradient_accumulation_steps": 2,
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
            lines=(4,),
            path="train.py",
            fixed="""
            import deepspeed
            config = {
                "train_micro_batch_size_per_gpu": 4,
                "gradient_accumulation_steps": 2,
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
        ),
        Invalid(
            '{\n  "train_batch_size": 16,\n  "bf16": {"enabled": "auto"}\n}\n',
            lines=(3,),
            files=(
                ("run.sh", "deepspeed train.py --ds_config ds_config.json\n"),
                (
                    "train.py",
                    """
                    import argparse
                    import json
                    import deepspeed
                    parser = argparse.ArgumentParser()
                    parser.add_argument("--ds_config")
                    parser.add_argument("--model")
                    args = parser.parse_args()
                    with open(args.ds_config) as handle:
                        settings = json.load(handle)
                    if "small" in args.model:
                        settings["bf16"]["enabled"] = False
                    elif "tiny" in args.model:
                        settings["bf16"]["enabled"] = False
                    engine, _, _, _ = deepspeed.initialize(model=model, config=settings)
                    """,
                ),
            ),
        ),
        Invalid(
            """
            def build_config(stage, offload):
                zero = {
                    "stage": stage,
                    "offload_param": {"device": "cpu" if offload else "none"},
                    "reduce_bucket_size": "auto",
                }
                return {"train_batch_size": 16, "zero_optimization": zero}
            """,
            lines=(6,),
            path="ds_helpers.py",
            files=(
                (
                    "train.py",
                    """
                    import deepspeed
                    from ds_helpers import build_config
                    class Worker:
                        def start(self, model):
                            config = build_config(3, False)
                            self.engine, _, _, _ = deepspeed.initialize(model=model, config=config)
                    """,
                ),
            ),
        ),
        Invalid(
            """
            def build_config():
                return {"train_batch_size": 16, "bf16": {"enabled": "auto"}}
            """,
            lines=(3,),
            path="ds_helpers.py",
            files=(
                (
                    "train.py",
                    """
                    import deepspeed
                    from ds_helpers import build_config
                    def main(model):
                        config = build_config()
                        engine, _, _, _ = deepspeed.initialize(model=model, config=config)
                        config, reference = load_other()
                        return engine, config, reference
                    """,
                ),
            ),
        ),
    )

    def check(self) -> None:
        origin = self.context.origin
        if origin in (Origin.TRAINER, Origin.FILE, Origin.UNLINKED) or autotuning_enabled(self.root):
            # the Trainer or accelerate fill "auto" values, DeepSpeed's autotuner too; and a file whose reader
            # dslint does not know (nothing names it, or its script's use of the option is not followed) may be
            # theirs: reported only where the link to initialize is seen
            return
        # a value the reading script replaces before initialize (it or a section holding it) never reaches DeepSpeed
        replaced = self.context.replaced_keys
        written = {"zero_optimization", PATH_SEPARATOR.join(("zero_optimization", "stage"))} & replaced
        stage = zero_stage(self.root) if not written else None  # the script may set another stage in code
        found = [
            (path, entry)
            for path, entry in auto_entries(self.root)
            if not any(PATH_SEPARATOR.join(path[:end]) in replaced for end in range(1, len(path) + 1))
            and not (len(path) > 1 and self._disabled(path[0]))
            # a ZeRO-3 setting of a config at stage 0-2: never read, its default changes nothing
            and not (
                stage is not None
                and stage < 3
                and path[0] == "zero_optimization"
                and path[1:2] != ("stage",)
                and len(path) > 1
                and path[1].startswith("stage3_")
            )
        ]
        for path, entry in found:
            where = ".".join(path)
            if len(path) == 1 and path[0] in BATCH_KEYS:
                effect = "DeepSpeed fails at start-up (TypeError)"
            elif len(path) == 1 and path[0] in self.schema.accepted_strings:
                values = ", ".join(self.schema.accepted_strings[path[0]].values)
                effect = f"DeepSpeed fails at start-up (it takes only {values})"
            elif self.schema.section_model(path[0]) is not None:
                effect = "DeepSpeed uses the default"
                if path == ("zero_optimization", "stage"):
                    effect += " (stage 0: ZeRO off)"
                elif path[-1] == "enabled":
                    effect += f" (`{path[0]}` off)"
            else:
                effect = "DeepSpeed fails where the value is used"
            read_in = self.context.read_in  # the launched script hands the file on in a module it imports
            note = f" (initialize reads it: {read_in[0].path}:{read_in[0].line})" if read_in else ""
            if read_in and read_in[0].message == PRESUMED:
                beside = f"{os.path.basename(read_in[0].path)}:{read_in[0].line}"
                note = f" (nothing names it: read as {beside}'s initialize args=)"
            self.report_key(
                entry,
                f'write a value for `{where}`, not "auto": {effect}{note}',
                fix=self._derived(path, entry),
                related=read_in,
            )

    def _disabled(self, key: str) -> bool:
        """A section written `"enabled": false` (`fp16`, `bf16`): DeepSpeed reads none of its other values."""
        section = self.root.get(key)
        enabled = section.get("enabled") if isinstance(section, Object) else None
        return enabled is not None and to_python(enabled) is False

    def _derived(self, path: tuple[str, ...], entry: Entry) -> Fix | None:
        """A batch key whose value DeepSpeed derives from the other two (runtime/config.py,
        `_set_batch_related_parameters`): remove the "auto" entry."""
        source = self.context.source
        if source is None or len(path) != 1 or path[0] not in BATCH_KEYS or self.root.opaque:
            return None
        others = [batch_number(self.root.get(key)) for key in BATCH_KEYS if key != path[0]]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in others):
            return None
        if [e.key for e in self.root.entries].count(path[0]) != 1:
            return None
        edits = remove_entry(source, self.root, entry)
        if edits is None:
            return None
        return Fix(edits, Applicability.UNSAFE, f'remove `{path[0]}`: "auto"; DeepSpeed derives it from the other two')
