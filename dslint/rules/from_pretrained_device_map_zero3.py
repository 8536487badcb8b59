"""DSL207: `from_pretrained(..., device_map=...)` in a script that runs ZeRO-3."""

from __future__ import annotations

import functools
from dataclasses import replace

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.config_link import accelerate_runs
from dslint.project.engine_config import HF_KINDS, ZeroSource, ZeroSources
from dslint.project.shipped_configs import ships_only_lower_stages
from dslint.script.facts import method_name
from dslint.script.hf_models import is_model_from_pretrained, is_none, keyword_value
from dslint.script.hf_trainers import TrainerNames
from dslint.script.model_moves import ModelSink
from dslint.script.model_reach import ModelReach
from dslint.script.stage_guard import StageGuards
from dslint.script.walk import all_nodes

_ACCELERATE_SCRIPT = """
from accelerate import Accelerator
from transformers import AutoModelForCausalLM
accelerator = Accelerator()
model = AutoModelForCausalLM.from_pretrained(name, device_map=accelerator.device)
model, optimizer = accelerator.prepare(model, optimizer)
"""
_ACCELERATE_YAML = """distributed_type: DEEPSPEED
deepspeed_config:
  zero_stage: {stage}
  zero3_init_flag: false
num_processes: 2
"""


class FromPretrainedDeviceMapZero3(ScriptRule):
    code = "DSL207"
    slug = "from-pretrained-device-map-zero3"
    message = "under ZeRO-3, from_pretrained must not get a device_map; remove it and let DeepSpeed place the model"
    zero3_message = (
        "ZeRO-3 is on: from_pretrained must not get a device_map; remove it and let DeepSpeed place the model"
    )
    accelerate_template = "ZeRO-3 under accelerate ({where}): from_pretrained must not get a device_map; remove it"
    severity = Severity.ERROR
    needs_engine = False
    # its ZeroSources, or the accelerate launches of the script (the project index), are all it reads the stage from
    needs_zero_source = True
    # Prefilter tokens (dslint.lint.prefilter): HF scripts configure DeepSpeed without calling initialize; a live
    # `HfDeepSpeedConfig` alone turns ZeRO-3 on for transformers, in a file that never writes `deepspeed`.
    required_tokens = (b"deepspeed", b"from_pretrained", b"device_map")
    # An accelerate script hands DeepSpeed its model through `accelerator.prepare`, in a file that may never write
    # `deepspeed`: the launch's accelerate config says ZeRO-3.
    alternative_tokens = (
        (b"HfDeepSpeedConfig", b"from_pretrained", b"device_map"),
        (b"prepare", b"from_pretrained", b"device_map"),
    )
    docs = RuleDocs(
        what="""
            Flags `from_pretrained(..., device_map=...)` on a transformers model class in a script that hands
            DeepSpeed a ZeRO-3 config (`deepspeed.initialize`, `HfDeepSpeedConfig`,
            `TrainingArguments(deepspeed=...)`): an error when the config says stage 3, a warning that says
            "under ZeRO-3" when the config cannot be read, unless no launch gives the script a config and every
            DeepSpeed config the project ships near it (its folder and two above, a package's own README not
            ending the search) is below stage 3. Silent when every config is known to use a lower
            stage, and in scripts that hand DeepSpeed no config, or only one from a command-line option that no
            launch of the project gives (`deepspeed=script_args.deepspeed`, never passed: no known run has
            DeepSpeed there), and where every `HfDeepSpeedConfig` or `TrainingArguments` is made after the load
            (later in its function, or after the call of the function that loads): nothing is alive to raise,
            and the load before them is DSL208's finding. When the ZeRO-3 config goes only to
            `deepspeed.initialize` (no `HfDeepSpeedConfig`, no `TrainingArguments`), only a model that reaches
            `initialize` is flagged (here, or through a builder's return or a function handing it on, wrapped or
            not, from either arm of an `if`): a frozen teacher or reference model loaded with a device map that
            never reaches the engine stays where accelerate placed it, as intended. A script that `accelerate
            launch` starts with a DeepSpeed config at stage 3 (the YAML's `zero_stage`, or the stage of its
            `deepspeed_config_file`) is flagged where a model loaded with a device map reaches
            `accelerator.prepare(...)`, whatever `zero3_init_flag` says; the finding names the launcher and the
            config. A load inside an `if` that tests the ZeRO stage (the `else` of `if stage == 3:`) is the
            author's handling of the stage: left alone.
        """,
        why="""
            When transformers knows that ZeRO-3 is on (a live `HfDeepSpeedConfig`, or
            `TrainingArguments(deepspeed=...)`), `from_pretrained` raises "DeepSpeed Zero-3 is not compatible
            with passing a `device_map`": the test is `is_deepspeed_zero3_enabled()`, a process-wide flag, so it
            raises for every model, the teacher and the reference model too. In a raw script without it,
            accelerate places the full model on the GPU of each rank first, and ZeRO-3 partitions it only later:
            the memory ZeRO-3 was meant to save is spent at load time. A model that never reaches the engine is
            not partitioned at all, so its device map is what places it. Under `accelerate launch`, accelerate's
            DeepSpeed plugin creates the live `HfDeepSpeedConfig` only when `zero3_init_flag` is on (its default
            depends on the accelerate release): with it on and the `Accelerator` created first, `from_pretrained`
            raises; with it off, every rank holds the whole model on its GPU until `prepare` partitions it.
        """,
        example="""
            ds_config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}
            model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
        """,
        use_instead="""
            ds_config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}
            dschf = HfDeepSpeedConfig(ds_config)  # keep this reference alive
            model = AutoModelForCausalLM.from_pretrained(name)
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
        """,
    )
    valid = (
        Valid(  # the author handles the stage: the device map only below stage 3
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            ds_config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}
            if ds_config["zero_optimization"]["stage"] == 3:
                model = AutoModelForCausalLM.from_pretrained("gpt2")
            else:
                model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="cuda:0")
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
            """
        ),
        # the ZeRO-3 TrainingArguments are made after the load (in a helper main calls first): nothing raises
        # (loading before them is DSL208's finding)
        Valid(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            def load(name):
                return AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            def main(name):
                model = load(name)
                args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 3}})
                Trainer(model=model, args=args).train()
            """
        ),
        # the config comes from an option no launch of the project gives: no known run has DeepSpeed here
        Valid(
            """
            from transformers import LlamaForCausalLM, TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed=args.deepspeed)
            model = LlamaForCausalLM.from_pretrained(path, device_map={"": 0})
            """
        ),
        Valid(
            _ACCELERATE_SCRIPT,
            files=(
                ("run.sh", "accelerate launch --config_file zero2.yaml train.py\n"),
                ("zero2.yaml", _ACCELERATE_YAML.format(stage=2)),
            ),
        ),
        Valid(
            """
            from accelerate import Accelerator
            from transformers import AutoModelForCausalLM
            accelerator = Accelerator()
            teacher = AutoModelForCausalLM.from_pretrained(name, device_map=accelerator.device)
            student = AutoModelForCausalLM.from_pretrained(name)
            student = accelerator.prepare(student)
            """,
            files=(
                ("run.sh", "accelerate launch --config_file zero3.yaml train.py\n"),
                ("zero3.yaml", _ACCELERATE_YAML.format(stage=3)),
            ),
        ),
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 2}})
            """
        ),
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM, AutoTokenizer
            tok = AutoTokenizer.from_pretrained(name, device_map="auto")
            model = AutoModelForCausalLM.from_pretrained(name, device_map=None)
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """
        ),
        # a name bound to None gives no map
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            device_map = None
            model = AutoModelForCausalLM.from_pretrained(name, device_map=device_map)
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """
        ),
        # no device map where DeepSpeed runs: the author tests its setting
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            device_map = None if args.deepspeed else "auto"
            model = AutoModelForCausalLM.from_pretrained(name, device_map=device_map)
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """
        ),
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            teacher = AutoModelForCausalLM.from_pretrained(teacher_name, device_map={"": rank})
            student = AutoModelForCausalLM.from_pretrained(name)
            engine, *_ = deepspeed.initialize(model=student, config={"zero_optimization": {"stage": 3}})
            """
        ),
        Valid(
            """
            from transformers import AutoModelForCausalLM
            from deepspeed.accelerator import get_accelerator
            model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            """
        ),
    )
    invalid = (
        Invalid(  # the test reads no DeepSpeed setting: the map is given under ZeRO-3 too
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            device_map = None if args.cpu else "auto"
            model = AutoModelForCausalLM.from_pretrained(name, device_map=device_map)
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """,
            lines=(5,),
        ),
        # ... but called again once they exist, the helper's load raises
        Invalid(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            def load(name):
                return AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            def main(name):
                model = load(name)
                args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 3}})
                Trainer(model=model, args=args, ref_model=load(name)).train()
            """,
            lines=(4,),
        ),
        Invalid(
            _ACCELERATE_SCRIPT,
            lines=(5,),
            files=(
                ("run.sh", "accelerate launch --config_file zero3.yaml train.py\n"),
                ("zero3.yaml", _ACCELERATE_YAML.format(stage=3)),
            ),
        ),
        Invalid(
            """
            import deepspeed
            import transformers
            model = transformers.AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """,
            lines=(4,),
        ),
        Invalid(
            """
            import deepspeed
            from peft import get_peft_model
            from transformers import AutoModelForCausalLM
            def build(name):
                model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
                model = get_peft_model(model, lora)
                return deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """,
            lines=(6,),
        ),
        Invalid(
            """
            from transformers import AutoModelForCausalLM, TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 3}})
            teacher = AutoModelForCausalLM.from_pretrained(teacher_name, device_map="auto")
            """,
            lines=(4,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.sources = ZeroSources(self.context)
        self.candidates: list[cst.Call] = []
        self.trainers = TrainerNames(self.context)
        self.prepares: list[cst.Call] = []
        self.calls: list[cst.Call] = []
        self.stage_guards = StageGuards()  # under `if zero_stage == 3: ... else:` the author handles the stage

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def visit_If(self, node: cst.If) -> None:
        self.stage_guards.enter(node)

    def leave_If(self, original_node: cst.If) -> None:
        self.stage_guards.leave()

    def visit_Call(self, node: cst.Call) -> None:
        self.sources.consider(node)
        self.calls.append(node)
        if method_name(node) == "prepare" and isinstance(node.func, cst.Attribute):
            self.prepares.append(node)
        if not is_model_from_pretrained(self.context, node):
            return
        device_map = keyword_value(node, "device_map")
        given = device_map is not None and not is_none(device_map) and not self.stage_guards.inside
        if given and not self._none_under_deepspeed(device_map):  # type: ignore[arg-type]
            self.candidates.append(node)

    def _none_under_deepspeed(self, value: cst.BaseExpression) -> bool:
        """`None if cfg.deepspeed else "auto"` (written, or bound to the name given): the author gives no device
        map where DeepSpeed runs (the test reads a DeepSpeed or ZeRO setting); a name bound to None gives none."""
        if isinstance(value, cst.Name):
            binding = self.facts.local_binding(value)
            value = binding.value if binding is not None and binding.value is not None else value
            if is_none(value):
                return True  # `device_map = None` before the call: no map at all
        if not isinstance(value, cst.IfExp) or not (is_none(value.body) or is_none(value.orelse)):
            return False
        read = [n.value for n in all_nodes(value.test) if isinstance(n, cst.Name)]
        read += [n.attr.value for n in all_nodes(value.test) if isinstance(n, cst.Attribute)]
        return any("deepspeed" in word.lower() or "zero" in word.lower() for word in read)

    def leave_Module(self, original_node: cst.Module) -> None:
        reported = self._zero_sources(original_node)
        self._accelerate(original_node, [node for node in self.candidates if node not in reported])

    def _zero_sources(self, original_node: cst.Module) -> set[cst.Call]:
        """The candidates under a ZeRO-3 config this file hands DeepSpeed (reported here)."""
        reported: set[cst.Call] = set()
        sources = self.sources.sources
        if not sources:
            return reported
        # a stage presumed from the shipped configs is not enough for an error that says transformers raises
        sources = [replace(source, stage=None) if source.presumed else source for source in sources]
        reaching: ModelReach | None = None
        for node in self.candidates:
            # transformers knows of ZeRO-3 only through a config alive at the load: one made after it (the model
            # loaded, then `TrainingArguments(deepspeed=...)`) raises nothing; that load is DSL208's
            hf_sources = [source for source in sources if source.kind in HF_KINDS]
            live = [source for source in hf_sources if not self.sources.runs_after(source, node, self.calls)]
            if hf_sources and not live and not any(source.kind not in HF_KINDS for source in sources):
                continue
            hf_stages = [source.stage for source in live]
            if 3 in hf_stages or None in hf_stages:
                considered = [s for s in sources if s.kind not in HF_KINDS or s in live]  # it raises for any model
            else:
                if reaching is None:
                    reaching = ModelReach(self.facts, original_node)
                if not reaching.reaches(node):
                    continue  # a model that never reaches the engine (a teacher, a reference model)
                considered = [source for source in sources if source.kind not in HF_KINDS]
            if 3 in [source.stage for source in considered]:
                self.report(node, self.zero3_message)
                reported.add(node)
            elif (
                any(source.stage is None and not self._never_given(source) for source in considered)
                and not self._lower_stages_shipped
            ):
                self.report(node, self.message, severity=Severity.WARNING)
                reported.add(node)
        return reported

    @functools.cached_property
    def _lower_stages_shipped(self) -> bool:
        """A config of unknown stage, where no launch gives the script one and every config the project ships near
        it is below stage 3 (`shipped_configs.ships_only_lower_stages`): no sign of ZeRO-3."""
        return ships_only_lower_stages(self.context)

    def _never_given(self, source: ZeroSource) -> bool:
        """A config read from a command-line option (`deepspeed=script_args.deepspeed`) that no launch of the
        project gives this script: no known run has DeepSpeed there, so nothing says ZeRO-3 may be on."""
        if source.kind != "TrainingArguments":
            return False
        expression = keyword_value(source.call, "deepspeed")
        if not isinstance(expression, cst.Attribute):
            return False
        option = expression.attr.value
        project = self.facts.project  # None: the index knows no launch of this file
        launches = project.launches if project is not None else ()
        return not any(launch.options.get(option) or launch.config_path for launch in launches)

    def _accelerate(self, original_node: cst.Module, candidates: list[cst.Call]) -> None:
        """Models loaded with a device map that reach `accelerator.prepare` in a script `accelerate launch` starts
        at ZeRO stage 3 (each such launch named)."""
        prepares = [
            call
            for call in self.prepares
            if isinstance(call.func, cst.Attribute) and self.trainers.holds_accelerator(call.func.value)
        ]
        if not candidates or not prepares:
            return
        runs = [run for run in accelerate_runs(self.context) or () if run.zero_stage == 3]
        if not runs:
            return
        facts = self.facts
        sinks = [
            ModelSink(arg.value, facts.scope_at(call), facts.start(call), None, call)
            for call in prepares
            for arg in call.args
            if not arg.star
        ]
        reach = ModelReach(facts, original_node, sinks)
        related = [r for run in runs for r in run.via]
        where = ", ".join(dict.fromkeys(f"{r.path}:{r.line}" for run in runs for r in run.via[-1:]))
        for node in candidates:
            if reach.reaches(node):
                self.report(node, self.accelerate_template.format(where=where), related=related)
