"""DSL208: under ZeRO-3, `from_pretrained` runs before a live `HfDeepSpeedConfig` exists."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import HF_MODEL_BUILDS, TRL_TRAINING_ARGUMENTS
from dslint.project.config_link import accelerate_runs
from dslint.project.engine_config import ZeroSource, ZeroSources
from dslint.project.evidence import built_evidence, config_evidence
from dslint.project.late_zero3 import (
    accelerate_stage3,
    accelerator_after,
    handed_on,
    returned_arguments,
    zero3_init_beside,
    zero3_made_after,
)
from dslint.script.facts import ScopeKind
from dslint.script.hf_models import is_model_from_pretrained
from dslint.script.model_reach import ModelReach
from dslint.script.one_rank import one_process_launches

# accelerate's Accelerator, as its own modules export it
ACCELERATOR_CLASSES = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})

_LOAD_PAIR = """
from transformers import AutoModelForCausalLM, AutoTokenizer
def load_pair(name):
    model = AutoModelForCausalLM.from_pretrained(name)
    return model, AutoTokenizer.from_pretrained(name)
"""


_ACCELERATED = """
from accelerate import Accelerator
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
accelerator = Accelerator()
model = AutoModelForCausalLM.from_pretrained("gpt2")
args = TrainingArguments(output_dir="out", deepspeed="z3.json")
Trainer(model=model, args=args).train()
"""
_Z3 = ("z3.json", '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n')


# A training function handed its config path by its caller (a command-line option), in a project whose shipped
# configs are the evidence: every one ZeRO-3 (flagged), or one of them below it (silent).
_FROM_CALLER = """
from transformers import Trainer, TrainingArguments
from zoo import load_pair
def train(name, deepspeed):
    model, tokenizer = load_pair(name)
    args = TrainingArguments(output_dir="out", deepspeed=deepspeed)
    Trainer(model=model, args=args).train()
"""
_STAGE = '{{"zero_optimization": {{"stage": {stage}}}, "train_micro_batch_size_per_gpu": "auto"}}\n'


def _accelerate_yaml(flag: str) -> str:
    return (
        f"distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: z3.json\n  zero3_init_flag: {flag}\n"
    )


# A Ray-style worker handed its config in a dict of options: an item of a parameter comes from outside the script.
_WORKER = """
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
def worker(**cfg):
    model = AutoModelForCausalLM.from_pretrained(cfg["name"])
    Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=cfg["ds_config"])).train()
"""

_IN_ENVIRONMENT = _WORKER.replace('cfg["ds_config"]', 'os.environ.get("DS_CONFIG")').replace(
    "from transformers", "import os\nfrom transformers"
)

# The TrainingArguments come from a function of the script that builds and returns them.
_MADE_ARGS = """
from transformers import AutoModelForCausalLM, Seq2SeqTrainingArguments, Trainer
def make_args():
    return Seq2SeqTrainingArguments(output_dir="out", deepspeed="z3.json")
def main(name):
    {first}
    {second}
    Trainer(model=model, args=args).train()
"""
_LOAD = "model = AutoModelForCausalLM.from_pretrained(name).half()"
_ARGS = "args = make_args()"

# accelerate runs the script with the DeepSpeed config of the YAML shipped beside it (no launcher found)
_PREPARED = """
from accelerate import Accelerator
from transformers import AutoModelForCausalLM
def main(name):
    {load}
    accelerator = Accelerator()
    model = accelerator.prepare(model)
"""


class FromPretrainedWithoutHfDeepSpeedConfig(ScriptRule):
    code = "DSL208"
    slug = "from-pretrained-without-hf-deepspeed-config"
    message = "ZeRO-3 is on, but no live HfDeepSpeedConfig exists yet: create one before building the model"
    unbound_message = "HfDeepSpeedConfig(...) is not kept (transformers holds a weak reference); bind it to a name"
    elsewhere_template = (
        "a ZeRO-3 engine is made of this model ({where}), but no HfDeepSpeedConfig is alive: create one"
    )
    helper_template = "{where} builds the model before the ZeRO-3 TrainingArguments exist: create them first"
    helper_engine_template = "{where} builds the model whole for a ZeRO-3 engine: keep an HfDeepSpeedConfig alive first"
    accelerate_template = (
        "{load} before the Accelerator (line {line}), with no HfDeepSpeedConfig alive: the whole model is built"
    )
    severity = Severity.WARNING
    needs_engine = False
    needs_zero_source = True  # its ZeroSources are all it reads the stage from
    # Prefilter tokens (dslint.lint.prefilter): HF scripts configure DeepSpeed without calling initialize. The rule
    # reports at a model's `from_pretrained`/`from_config`, at a call of a project helper loading one (the project
    # index's `pretrained_loads`: the file need not name `from_pretrained`), and at an `HfDeepSpeedConfig(...)`
    # whose result is dropped (wherever it is: the loads it was meant for may be in another module). A Trainer
    # whose config comes from a launch may never write `deepspeed`, nor a script `accelerate launch` runs.
    required_tokens = (b"deepspeed", b"from_pretrained")
    alternative_tokens = (
        (b"HfDeepSpeedConfig",),
        (b"deepspeed", b"from_config"),
        (b"Accelerator", b"from_pretrained"),
        (b"Accelerator", b"from_config"),
        (b"from_pretrained", b"TrainingArguments"),
        (b"from_config", b"TrainingArguments"),
        *((b"from_pretrained", name.encode()) for name in sorted(TRL_TRAINING_ARGUMENTS)),
    )
    runs_on_pretrained_loads = True
    docs = RuleDocs(
        what="""
            Flags a transformers model's `from_pretrained(...)` (or `from_config(...)`, which builds it the same way)
            that runs before `deepspeed.initialize` (or before `TrainingArguments(deepspeed=...)`) with a config known
            to enable ZeRO-3, when no `HfDeepSpeedConfig` (or `TrainingArguments(deepspeed=...)`) bound to a name was
            created before it, in the same function or at module level. An `HfDeepSpeedConfig(...)` whose result is not
            kept is reported on its own. Configs that cannot be read are not guessed at: the rule stays silent then, and
            where every launch of the script the project holds starts one process (one copy of the model to hold). When
            the ZeRO-3 config goes only to `deepspeed.initialize`, only a model that reaches `initialize` is flagged: a
            frozen teacher or reference model that never reaches the engine is never partitioned (and under an
            `HfDeepSpeedConfig` it would be built partitioned, with nothing to gather its parameters). A model handed to
            an `initialize` in another function or module (a constructor or function whose parameter goes to it) is
            flagged when that call's config is known to be stage 3: a file, a dict literal, or the dict a project helper
            returns (its `stage` a constant or a parameter's value at the call), and this file makes no
            `HfDeepSpeedConfig` or Trainer config and no accelerate launch may keep one; the finding names the
            `initialize` call and the config's builder. `from_pretrained` of a class of the file, or of another
            module of the project, deriving from a transformers model class counts as transformers' own. A call of
            a project function that returns a model `from_pretrained` builds (through further project functions,
            alone or in a returned tuple: `model, tokenizer = load_pair(name)`), made before a ZeRO-3
            `TrainingArguments(deepspeed=...)` of the same function, is
            flagged at the call, naming where the model is loaded; so is such a call whose model reaches a ZeRO-3
            `initialize` of the same function (`loader = Loader(); model = loader.causal_lm(name)` too; a helper
            loading the class its caller hands it, `create_hf_model(AutoModelForCausalLM, ...)`; not one making its
            own `HfDeepSpeedConfig`). A load at module level comes before a ZeRO-3 config made in a function of the
            module that uses the model; a load a class's constructor stores in `self.model` (itself or through a
            method it calls), or a method the class's driver calls first (`self.load_model(); self.train()`, no
            method of it making the config before the load), comes before a ZeRO-3 config made in another method that
            hands `self.model` on as a Trainer's model or initialize's. An initialize's config may be a project
            function's dict whose stage is the caller's argument: an option read per launch
            (`get_train_ds_config(stage=args.zero_stage)` under `--zero_stage 3`), as the finding names. A config the
            script reads itself (`json.load(open(args.ds_config))`) is the file the path names, as the launchers give
            it. A config handed in from outside the script that cannot be read (a command-line option, a parameter, a
            path built from one) is ZeRO-3 when every DeepSpeed config the project ships is (beside the script, in its
            config folders, and up to two folders above it): the finding names them; not for a Trainer whose known
            launches never give it a config; an item of a parameter (`cfg["ds_config"]`) and the environment
            (`os.environ.get`) are handed in too. A call of a function of the file returning the
            `TrainingArguments(deepspeed=...)` it builds stands for them where it is made; a model loaded before it is
            flagged when handed on as a Trainer's model (not a frozen teacher). A model loaded before the
            `Accelerator()` of its function and handed to `prepare` or a Trainer is flagged when every accelerate launch
            of the script, or with no launcher the accelerate setup shipped near it, runs ZeRO-3. An `Accelerator()`
            made before the load keeps a config alive when accelerate runs DeepSpeed with `zero3_init_flag` (its
            plugin's `set_deepspeed_weakref`): under every accelerate launch of the script that sets it, or, when no
            accelerate launch is found, with such an accelerate YAML beside the script.
        """,
        why="""
            transformers finds out that ZeRO-3 is on only through a live `HfDeepSpeedConfig`, which it holds by
            a weak reference (`TrainingArguments(deepspeed=...)` keeps one). With it, `from_pretrained` builds
            the model inside `deepspeed.zero.Init`, partitioned as it is created; without it, every rank first
            materialises the whole model in CPU memory (and on the GPU with a `device_map`), which is what
            ZeRO-3 was meant to avoid.
        """,
        example="""
            ds_config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}
            model = AutoModelForCausalLM.from_pretrained(name)
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
        # one of the configs the project ships runs ZeRO-2: the one the environment names may be it
        Valid(_IN_ENVIRONMENT, files=(_Z3, ("z2.json", _STAGE.format(stage=2)))),
        Valid(_WORKER, files=(_Z3, ("z2.json", _STAGE.format(stage=2)))),
        Valid(_MADE_ARGS.format(first=_ARGS, second=_LOAD), files=(_Z3,)),
        # a frozen teacher loaded before them is right: after them it would be built partitioned
        Valid(
            _MADE_ARGS.format(first="teacher = AutoModelForCausalLM.from_pretrained(name)", second=_ARGS).replace(
                "Trainer(model=model, args=args)", "Trainer(model=load(), teacher_model=teacher, args=args)"
            ),
            files=(_Z3,),
        ),
        Valid(
            _PREPARED.format(load="model = AutoModelForCausalLM.from_pretrained(name)"),
            files=(("z2.json", _STAGE.format(stage=2)), ("acc.yaml", _accelerate_yaml("true").replace("z3", "z2"))),
        ),
        # every launch starts one process: there is one copy of the model to hold, whatever the load
        Valid(
            _MADE_ARGS.format(first=_LOAD, second=_ARGS), files=(_Z3, ("run.sh", "deepspeed --num_gpus 1 train.py\n"))
        ),
        # one process (the launch's YAML): it holds the whole model whatever the load
        Valid(
            _PREPARED.format(load="model = AutoModelForCausalLM.from_pretrained(name)"),
            files=(
                _Z3,
                ("acc.yaml", _accelerate_yaml("true") + "num_processes: 1\n"),
                ("run.sh", "accelerate launch --config_file acc.yaml train.py\n"),
            ),
        ),
        # a reference model never prepared is never partitioned
        Valid(
            _PREPARED.format(load="reference = AutoModelForCausalLM.from_pretrained(name).eval()"),
            files=(_Z3, ("acc.yaml", _accelerate_yaml("true"))),
        ),
        # accelerate's DeepSpeedPlugin keeps an HfDeepSpeedConfig alive once `Accelerator()` is made under
        # zero3_init_flag: the launch's YAML, or, with no launch found, the one beside the script
        Valid(_ACCELERATED, files=(_Z3, ("acc.yaml", _accelerate_yaml("true")))),
        Valid(
            _ACCELERATED,
            files=(
                _Z3,
                ("configs/acc.yaml", _accelerate_yaml("true").replace("z3.json", "../z3.json")),
                ("run.sh", "accelerate launch --config_file configs/acc.yaml train.py\n"),
            ),
        ),
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            def main(args, student):
                teacher = AutoModelForCausalLM.from_pretrained(args.teacher).eval()
                engine, *_ = deepspeed.initialize(model=student, config={"zero_optimization": {"stage": 3}})
            """
        ),
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            from transformers.integrations import HfDeepSpeedConfig
            ds_config = {"zero_optimization": {"stage": 3}}
            dschf = HfDeepSpeedConfig(ds_config)
            model = AutoModelForCausalLM.from_pretrained(name)
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
            """
        ),
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained(name)
            engine, *_ = deepspeed.initialize(model=model, config=args.deepspeed_config)
            """
        ),
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            from zoo import load_pair
            def main(name):
                args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 3}})
                model, tokenizer = load_pair(name)
                Trainer(model=model, args=args).train()
            """,
            files=(("zoo.py", _LOAD_PAIR),),
        ),
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM, AutoTokenizer
            tokenizer = AutoTokenizer.from_pretrained(name)
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            model = AutoModelForCausalLM.from_pretrained(name)
            """
        ),
        Valid(
            _FROM_CALLER,
            files=(
                ("zoo.py", _LOAD_PAIR),
                ("configs/a100.json", _STAGE.format(stage=3)),
                ("configs/t4.json", _STAGE.format(stage=2)),
            ),
        ),
        # a config the script reads itself from a path it builds: not the command line's, nothing presumed
        Valid(
            """
            import json
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            def train(name, size):
                model = AutoModelForCausalLM.from_pretrained(name)
                config = json.load(open(size + ".json"))
                Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=config)).train()
            """,
            files=(("configs/a100.json", _STAGE.format(stage=3)),),
        ),
    )
    invalid = (
        Invalid(_WORKER, lines=(4,), files=(_Z3,)),
        Invalid(_IN_ENVIRONMENT, lines=(5,), files=(_Z3,)),
        Invalid(_MADE_ARGS.format(first=_LOAD, second=_ARGS), lines=(6,), files=(_Z3,)),
        # `from_config` builds the model the same way (`_from_config`: inside zero.Init only under a live config)
        Invalid(
            _MADE_ARGS.format(first="model = AutoModelForCausalLM.from_config(cfg)", second=_ARGS),
            lines=(6,),
            files=(_Z3,),
        ),
        Invalid(
            _MADE_ARGS.format(first="model, tokenizer = load_pair(name)", second=_ARGS).replace(
                "def make_args", "from zoo import load_pair\ndef make_args"
            ),
            lines=(7,),
            files=(_Z3, ("zoo.py", _LOAD_PAIR)),
        ),
        Invalid(
            _PREPARED.format(load="model = AutoModelForCausalLM.from_pretrained(name)"),
            lines=(5,),
            files=(_Z3, ("acc.yaml", _accelerate_yaml("true"))),
        ),
        Invalid(
            _PREPARED.format(load="model = AutoModelForCausalLM.from_pretrained(name)"),
            lines=(5,),
            files=(
                _Z3,
                ("acc.yaml", _accelerate_yaml("true") + "num_processes: 4\n"),
                ("run.sh", "accelerate launch --config_file acc.yaml train.py\n"),
            ),
        ),
        Invalid(_ACCELERATED, lines=(5,), files=(_Z3, ("acc.yaml", _accelerate_yaml("false")))),
        # every DeepSpeed config the project ships is ZeRO-3: the one handed in by the caller is one of them
        Invalid(
            _FROM_CALLER,
            lines=(5,),
            files=(
                ("zoo.py", _LOAD_PAIR),
                ("configs/a100.json", _STAGE.format(stage=3)),
                ("configs/v100.json", _STAGE.format(stage=3)),
            ),
        ),
        Invalid(
            _ACCELERATED,
            lines=(5,),
            files=(
                _Z3,
                ("acc.yaml", _accelerate_yaml("true")),
                ("acc_plain.yaml", _accelerate_yaml("false")),
                ("run.sh", "accelerate launch --config_file acc_plain.yaml train.py\n"),
            ),
        ),
        Invalid(
            """
            import argparse
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            def parse():
                parser = argparse.ArgumentParser()
                parser.add_argument("--deepspeed", type=str, default=None)
                return parser.parse_known_args()
            def training_function(args):
                model = AutoModelForCausalLM.from_pretrained("gpt2")
                Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=args.deepspeed)).train()
            args, _ = parse()
            training_function(args)
            """,
            lines=(9,),
            files=(
                ("run_plain.sh", "python train.py\n"),
                ("run_zero3.sh", "deepspeed train.py --deepspeed z3.json\n"),
                ("z3.json", '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'),
            ),
        ),
        Invalid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            def main():
                ds_config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}
                model = AutoModelForCausalLM.from_pretrained(name)
                engine, *_ = deepspeed.initialize(model=model, config=ds_config)
            """,
            lines=(6,),
        ),
        Invalid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            from transformers.integrations import HfDeepSpeedConfig
            ds_config = {"zero_optimization": {"stage": 3}}
            HfDeepSpeedConfig(ds_config)
            model = AutoModelForCausalLM.from_pretrained(name)
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
            """,
            lines=(6, 7),
        ),
        Invalid(
            """
            from transformers import Trainer, TrainingArguments
            from zoo import load_pair
            def main(name):
                model, tokenizer = load_pair(name)
                args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 3}})
                Trainer(model=model, args=args).train()
            """,
            lines=(5,),
            files=(("zoo.py", _LOAD_PAIR),),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.sources = ZeroSources(self.context)
        self.loads: list[cst.Call] = []
        self.helper_loads: list[tuple[cst.Call, Related]] = []
        project = self.facts.project
        self.loaders = project.pretrained_loads if project is not None else {}
        self.accelerators: list[cst.Call] = []  # `Accelerator(...)`: under a zero3_init_flag launch, a live config
        self.calls: list[cst.Call] = []  # every call: helpers returning TrainingArguments, hand-offs of a model
        self.kept_by_accelerate: bool | None = None

    def visit_Call(self, node: cst.Call) -> None:
        self.sources.consider(node)
        self.calls.append(node)
        if self.facts.qualified(node.func) in ACCELERATOR_CLASSES:
            self.accelerators.append(node)
        if is_model_from_pretrained(self.context, node, HF_MODEL_BUILDS):
            self.loads.append(node)
        elif self.loaders:
            load = self.facts.call_fact(node, self.loaders)
            if load is not None:
                self.helper_loads.append((node, load))

    def leave_Module(self, original_node: cst.Module) -> None:
        facts = self.facts
        sources = self.sources
        reach: ModelReach | None = None
        # `args = setup_training_args(...)`: a function of this file returning its ZeRO TrainingArguments
        self.returned = returned_arguments(self.context, sources, self.calls)
        sources.sources.extend(self.returned)
        for source in sources.of_kind("HfDeepSpeedConfig"):
            if not source.bound and (source.stage == 3 or source.stage is None):
                self.report(source.call, self.unbound_message)
        if one_process_launches(facts):
            return  # every launch starts one process: it holds the one copy of the model, whatever the load
        for node in self.loads:
            scope = facts.scope_at(node)
            zero3_after = zero3_made_after(self.context, sources, node)
            live = any(
                source.bound and sources.in_scope_before(source, scope, node)
                for source in sources.of_kind("HfDeepSpeedConfig", "TrainingArguments")
            )
            if live or self._accelerator_keeps_one(node):
                continue
            if not zero3_after:
                built = node.func.attr.value if isinstance(node.func, cst.Attribute) else "from_pretrained"
                if self._before_accelerator(node, f"{built} runs", None):
                    continue
                reach = reach or ModelReach(facts, original_node)
                self._engine_elsewhere(node, reach)
                continue
            if self._side_model(node, zero3_after):
                continue
            if all(source.kind == "initialize" for source in zero3_after):
                reach = reach or ModelReach(facts, original_node)
                if not reach.reaches(node):
                    continue  # a teacher or reference model that never reaches the engine: never partitioned
            configs = [c for source in zero3_after for c in source.configs if c.zero_stage == 3]
            found = config_evidence(configs, files=True) if configs else None
            presumed = next((source for source in zero3_after if source.presumed), None)
            built, built_related = built_evidence(next((s.built for s in zero3_after if s.built), None))
            if found is not None and found.related:
                self.report(node, self.message + found.suffix, related=found.related)
            elif built:
                self.report(node, f"{self.message} ({built})", related=tuple(built_related))
            elif presumed is not None and all(source.presumed for source in zero3_after):
                self.report(node, self.message + presumed.evidence(), related=presumed.presumed)
            else:
                self.report(node)
        for node, load in self.helper_loads:
            if self._helper_load(node, load, "TrainingArguments"):
                continue
            if any(self.sources.of_kind("HfDeepSpeedConfig")):
                continue  # one made anywhere in the file may be what a caller keeps alive for this load
            where = f"{load.message.partition(' ')[0]} ({load.path}:{load.line})"
            if self._before_accelerator(node, f"{where} runs from_pretrained", load):
                continue
            reach = reach or ModelReach(facts, original_node)
            if reach.reaches(node):
                self._helper_load(node, load, "initialize")

    def _accelerator_keeps_one(self, node: cst.Call) -> bool:
        """An `Accelerator(...)` made before the load (earlier in its function, or at module level) under
        accelerate launches that all set `zero3_init_flag`: accelerate's DeepSpeedPlugin then keeps an
        HfDeepSpeedConfig alive (`set_deepspeed_weakref`), and from_pretrained builds the model partitioned."""
        facts = self.facts
        scope, at = facts.scope_at(node), facts.start(node)
        made_before = any(
            (facts.scope_at(call) is scope and facts.start(call) < at)
            or (facts.scope_at(call).kind is ScopeKind.MODULE and scope.kind is not ScopeKind.MODULE)
            for call in self.accelerators
        )
        if not made_before:
            return False
        if self.kept_by_accelerate is None:
            runs = accelerate_runs(self.context)
            if runs:
                self.kept_by_accelerate = all(run.zero3_init is True for run in runs)
            else:  # no accelerate launch found: the accelerate config beside the script is how it is launched
                self.kept_by_accelerate = runs is None or zero3_init_beside(self.context.path)
        return self.kept_by_accelerate

    def _before_accelerator(self, node: cst.Call, what: str, load: Related | None) -> bool:
        """Reported: a model (`node`, or the helper call returning it) loaded before the `Accelerator()` made later
        in its scope, handed on to DeepSpeed there (`prepare`, a Trainer), with no live config before it, while
        every way the script runs accelerate is ZeRO-3 (`project/late_zero3.py`)."""
        facts, sources = self.facts, self.sources
        later = accelerator_after(self.context, self.accelerators, node) if self.accelerators else None
        if later is None or not handed_on(self.context, node, self.calls):
            return False
        scope = facts.scope_at(node)
        if any(
            source.bound and sources.in_scope_before(source, scope, node)
            for source in sources.of_kind("HfDeepSpeedConfig", "TrainingArguments")
        ):
            return False
        zero3 = accelerate_stage3(self.context)
        if zero3 is None:
            return False
        line = self.context.span(later)[0].line
        message = self.accelerate_template.format(load=what, line=line) + f" (accelerate runs ZeRO-3: {zero3.where})"
        self.report(node, message, related=[*([load] if load is not None else []), *zero3.related])
        return True

    def _side_model(self, node: cst.Call, after: list[ZeroSource]) -> bool:
        """The ZeRO-3 TrainingArguments after the load all come from a function of this file that returns them,
        and the model is not handed on as a Trainer's model (a teacher, a reference model: one loaded after them
        would be built partitioned, with nothing to gather it)."""
        returned = self.returned
        if not all(any(source is made for made in returned) for source in after):
            return False
        return not handed_on(self.context, node, self.calls)

    def _helper_load(self, node: cst.Call, load: Related, kind: str) -> bool:
        """A project helper returns a model `from_pretrained` builds (`ProjectFacts.pretrained_loads`), called
        before a ZeRO-3 `TrainingArguments(deepspeed=...)` (`kind`), or before the ZeRO-3 `initialize` the model
        reaches, of the same function, with no live DeepSpeed config for transformers before the call."""
        facts, sources = self.facts, self.sources
        scope = facts.scope_at(node)
        after = zero3_made_after(self.context, sources, node, (kind,))
        if (
            not after
            or any(
                source.bound and sources.in_scope_before(source, scope, node)
                for source in sources.of_kind("HfDeepSpeedConfig", "TrainingArguments")
            )
            or self._side_model(node, after)
        ):
            return False
        where = f"{load.message.partition(' ')[0]} ({load.path}:{load.line})"
        template = self.helper_template if kind == "TrainingArguments" else self.helper_engine_template
        presumed = next((source for source in after if source.presumed), None)
        if presumed is not None and not any(source.stage == 3 and not source.presumed for source in after):
            message = template.format(where=where) + presumed.evidence()
            self.report(node, message, related=[load, *presumed.presumed])
            return True
        configs = [c for source in after for c in source.configs if c.zero_stage == 3]
        found = config_evidence(configs, files=True) if configs else None  # where ZeRO-3 comes from
        suffix, related = (found.suffix, found.related) if found is not None and found.related else ("", ())
        self.report(node, template.format(where=where) + suffix, related=[load, *related])
        return True

    def _engine_elsewhere(self, node: cst.Call, reach: ModelReach) -> None:
        """The model goes to an initialize in another function or module whose config is known to be stage 3
        (a file, a literal, a helper's dict), and this file makes no HfDeepSpeedConfig or Trainer config at all
        (one made anywhere here may be what a caller keeps alive) nor runs under an accelerate launch that may
        keep one (zero3_init_flag)."""
        sinks = [
            sink
            for sink in reach.sinks(node)
            if sink.origin is not None and sink.config is not None and sink.config.zero_stage == 3
        ]
        if not sinks or any(self.sources.of_kind("HfDeepSpeedConfig", "TrainingArguments")):
            return
        runs = accelerate_runs(self.context)
        if runs is None or any(run.zero_stage not in (0, 1, 2) for run in runs):
            return
        where = ", ".join(dict.fromkeys(f"{s.origin.path}:{s.origin.line}" for s in sinks if s.origin is not None))
        related = [r for s in sinks for r in (s.origin, *(s.config.evidence if s.config else ())) if r is not None]
        self.report(node, self.elsewhere_template.format(where=where), related=list(dict.fromkeys(related)))
