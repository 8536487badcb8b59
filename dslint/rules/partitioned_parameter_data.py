"""DSL212: a parameter's `.data` read or written as if whole where ZeRO-3 has partitioned it."""

from __future__ import annotations

import functools

import libcst as cst

from dslint.diagnostics import Related, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.bindings import BindingKind
from dslint.model.engine import Engine
from dslint.project.config_link import trainer_configs
from dslint.project.engine_config import HF_KINDS, ZeroSource, ZeroSources, zero_stage
from dslint.project.evidence import Evidence, config_evidence, evidence
from dslint.project.trainer_launches import parses_training_arguments
from dslint.script.engine_calls import argument
from dslint.script.facts import Role, method_name
from dslint.script.gathered import GatheredBlocks
from dslint.script.hf_models import is_model_from_pretrained
from dslint.script.loop import ENGINE_ROLES, LoopFacts, loop_facts
from dslint.script.parameter_loops import EngineParameterLoops
from dslint.script.walk import own_nodes

# `model.get_input_embeddings().weight.data`: the embedding tables a script edits by hand after adding tokens
EMBEDDING_GETTERS = frozenset({"get_input_embeddings", "get_output_embeddings"})
WEIGHTS = frozenset({"weight", "bias"})
# Special tokens the common tokenizers already hold (Llama's and Mistral's `</s>`, `<s>`, `<unk>`; GPT-2's
# `<|endoftext|>`), and a tokenizer's own token attributes: adding them adds nothing.
EXISTING_TOKENS = frozenset({"</s>", "<s>", "<unk>", "<|endoftext|>"})
TOKENIZER_OWN_TOKENS = frozenset({"eos_token", "bos_token", "unk_token"})
# HfArgumentParser's methods that build the TrainingArguments (and with them, transformers' DeepSpeed config)
PARSE_METHODS = frozenset({"parse_args_into_dataclasses", "parse_json_file", "parse_yaml_file", "parse_dict"})
# a file that reads these knows the parameters are partitioned (`p.ds_numel`, `p.ds_shape`, `p.ds_tensor`)
PARTITION_WORDS = ("ds_numel", "ds_shape", "ds_tensor", "ds_id", "ds_status")

_STAGE = '{{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {{"stage": {stage}}}}}'
_RESIZE = """
from transformers import AutoModelForCausalLM, TrainingArguments

def add_tokens(tokenizer, model, new):
    model.resize_token_embeddings(len(tokenizer))
    table = model.get_input_embeddings().weight.data
    table[-new:] = table[:-new].mean(dim=0, keepdim=True)

def main(name, tokenizer):
    args = TrainingArguments(output_dir="out", deepspeed={config})
    model = AutoModelForCausalLM.from_pretrained(name)
    add_tokens(tokenizer, model, 2)
    return args, model
"""
_PARSED = """
import transformers

def resize(tokenizer, model, new):
    model.resize_token_embeddings(len(tokenizer))
    rows = model.get_output_embeddings().weight.data
    rows[-new:] = rows[:-new].mean(dim=0, keepdim=True)

def train():
    parser = transformers.HfArgumentParser((transformers.TrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained("base")
    resize(tokenizer, model, 3)
"""
_LAUNCH = "deepspeed train.py --output_dir out --deepspeed {config}\n"
_ENGINE = """
import deepspeed

def train(model, ema):
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config={config})
    for shadow, p in zip(ema.parameters(), engine.parameters()):
        shadow.data.lerp_(p.data, 0.001)
    return engine
"""


def _files(stage: int) -> tuple[tuple[str, str], ...]:
    return (("run.sh", _LAUNCH.format(config="ds_z.json")), ("ds_z.json", _STAGE.format(stage=stage)))


class PartitionedParameterData(EngineParameterLoops, ScriptRule):
    code = "DSL212"
    slug = "partitioned-parameter-data"
    message = "ZeRO-3 has partitioned this parameter: .data is empty here; use it inside zero.GatheredParameters"
    severity = Severity.WARNING
    # The engine's parameters (a loop over them, or its embeddings) need an engine in the file; a model that
    # transformers builds partitioned needs none, only its arguments or an HfDeepSpeedConfig in the file (a
    # modelling file of transformers itself names the embedding getters and `.data`, never those).
    required_tokens = (b"deepspeed", b"data")
    runs_without_engine_on = tuple(
        (getter, b"data", source)
        for getter in (b"get_input_embeddings", b"get_output_embeddings")
        for source in (b"TrainingArguments", b"HfArgumentParser", b"HfDeepSpeedConfig")
    )
    # where the code is read: an embedding getter called, or a parameter loop where an engine may be
    call_shapes = (
        Shape(methods=tuple(sorted(EMBEDDING_GETTERS))),
        Shape(methods=("named_parameters", "parameters"), engine=True),
    )
    docs = RuleDocs(
        what="""
            Flags `.data` of a parameter that ZeRO-3 has partitioned, outside a
            `deepspeed.zero.GatheredParameters` block: `model.get_input_embeddings().weight.data` (or the output
            embeddings) of a model `from_pretrained` loaded while a ZeRO-3 config was alive for transformers
            (`TrainingArguments(deepspeed=...)` or the `HfArgumentParser` that builds them from a launch's
            `--deepspeed ds_z3.json`, a kept `HfDeepSpeedConfig`), also inside a helper of the file called with
            that model; the same of the engine or its module after `deepspeed.initialize` at stage 3; and
            `p.data` where `p` runs over the engine's parameters at stage 3. A file that reads `ds_numel`,
            `ds_shape` or `ds_tensor` anywhere is left alone.
        """,
        why="""
            Under ZeRO-3 each parameter keeps only its shard: DeepSpeed 0.19.8's `free_param`
            (`runtime/zero/partition_parameters.py`) sets `param.data` to an empty tensor, and the whole tensor
            exists only inside `GatheredParameters` or a module's forward. transformers builds the model inside
            `deepspeed.zero.Init` whenever a ZeRO-3 config is alive at `from_pretrained`
            (`is_deepspeed_zero3_enabled`), so the model is partitioned from the start, and
            `resize_token_embeddings` gathers only for its own copy. The common edit of new token rows
            (`emb[-n:] = emb[:-n].mean(0)`) then averages nothing and writes nothing: the new tokens keep their
            initial values on every rank, silently; an EMA or weight copy over `p.data` fails on shape or copies
            empty tensors.
        """,
        example="""
            args = TrainingArguments(output_dir="out", deepspeed="ds_z3.json")
            model = AutoModelForCausalLM.from_pretrained(name)
            model.resize_token_embeddings(len(tokenizer))
            table = model.get_input_embeddings().weight.data
            table[-2:] = table[:-2].mean(dim=0, keepdim=True)
        """,
        use_instead="""
            args = TrainingArguments(output_dir="out", deepspeed="ds_z3.json")
            model = AutoModelForCausalLM.from_pretrained(name)
            model.resize_token_embeddings(len(tokenizer))
            weight = model.get_input_embeddings().weight
            with deepspeed.zero.GatheredParameters([weight], modifier_rank=0):
                weight.data[-2:] = weight.data[:-2].mean(dim=0, keepdim=True)
        """,
    )
    valid = (
        Valid(_RESIZE.format(config=repr("ds_z.json")), files=(("ds_z.json", _STAGE.format(stage=2)),)),
        Valid(  # the model is loaded before transformers knows of ZeRO-3: whole until the Trainer's engine
            _RESIZE.format(config=repr("ds_z.json")).replace(
                "    args = TrainingArguments(output_dir=\"out\", deepspeed='ds_z.json')\n"
                "    model = AutoModelForCausalLM.from_pretrained(name)\n",
                "    model = AutoModelForCausalLM.from_pretrained(name)\n"
                "    args = TrainingArguments(output_dir=\"out\", deepspeed='ds_z.json')\n",
            ),
            files=(("ds_z.json", _STAGE.format(stage=3)),),
        ),
        Valid(
            _RESIZE.format(config=repr("ds_z.json")).replace(
                "    table = model.get_input_embeddings().weight.data\n"
                "    table[-new:] = table[:-new].mean(dim=0, keepdim=True)\n",
                "    weight = model.get_input_embeddings().weight\n"
                "    with deepspeed.zero.GatheredParameters([weight], modifier_rank=0):\n"
                "        weight.data[-new:] = weight.data[:-new].mean(dim=0, keepdim=True)\n",
            ),
            files=(("ds_z.json", _STAGE.format(stage=3)),),
        ),
        Valid(_PARSED, files=_files(2)),
        Valid(  # the pad token added is one the tokenizer has: nothing is added, the rows are never edited
            _RESIZE.format(config=repr("ds_z.json"))
            .replace("def add_tokens(tokenizer, model, new):", "def add_tokens(tokens, tokenizer, model):")
            .replace(
                "    model.resize_token_embeddings(len(tokenizer))\n",
                "    new = tokenizer.add_special_tokens(tokens)\n    model.resize_token_embeddings(len(tokenizer))\n",
            )
            .replace("add_tokens(tokenizer, model, 2)", 'add_tokens(dict(pad_token="</s>"), tokenizer, model)'),
            files=(("ds_z.json", _STAGE.format(stage=3)),),
        ),
        Valid(_PARSED),  # no launch gives the Trainer a config: nothing says DeepSpeed runs
        Valid(_ENGINE.format(config=_STAGE.format(stage=2))),
        Valid(_ENGINE.format(config=_STAGE.format(stage=3)).replace("p.data", "getattr(p, 'ds_tensor', p.data)")),
    )
    invalid = (
        Invalid(_RESIZE.format(config=repr("ds_z.json")), lines=(6,), files=(("ds_z.json", _STAGE.format(stage=3)),)),
        Invalid(_RESIZE.format(config=_STAGE.format(stage=3)), lines=(6,)),
        Invalid(_PARSED, lines=(6,), files=_files(3)),
        Invalid(_ENGINE.format(config=_STAGE.format(stage=3)), lines=(7,)),
        Invalid(  # the engine's own embeddings after initialize
            """
            import deepspeed
            def train(model, config):
                engine, _, _, _ = deepspeed.initialize(model=model, config=config)
                table = engine.module.get_input_embeddings().weight.data
                return engine, table
            """.replace("config=config", f"config={_STAGE.format(stage=3)}"),
            lines=(5,),
        ),
    )

    @functools.cached_property
    def loop(self) -> LoopFacts:  # type: ignore[override]
        """The file's loop facts, built only when a loop over parameters asks (`EngineParameterLoops`)."""
        return loop_facts(self.facts)

    @functools.cached_property
    def sources(self) -> ZeroSources:
        """The file's ZeRO sources, read from its calls only when a candidate asks (a large file seldom does)."""
        sources = ZeroSources(self.context)
        for call in self.calls:
            sources.consider(call)
        return sources

    def visit_Module(self, node: cst.Module) -> None:
        self.targets = []  # the enclosing loops (`EngineParameterLoops`)
        self.serial = 0
        self.gathered = GatheredBlocks(self.facts, for_modification=False)
        self.calls: list[cst.Call] = []
        self.embeddings: list[tuple[cst.Attribute, cst.BaseExpression]] = []  # `.data`, the model it is of
        self.looped: list[tuple[cst.Attribute, Engine]] = []  # `p.data` over an engine's parameters
        self.knows_partitions = False

    def visit_With(self, node: cst.With) -> None:
        self.gathered.enter(node)

    def leave_With(self, original_node: cst.With) -> None:
        self.gathered.leave(original_node)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.knows_partitions = self.knows_partitions or any(word in node.value for word in PARTITION_WORDS)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        name = node.attr.value
        if name in PARTITION_WORDS:
            self.knows_partitions = True
        if name != "data" or self.gathered.inside:
            return
        owner = node.value
        if isinstance(owner, cst.Name):
            found = self.parameter_loop(owner)
            if found is not None:
                self.looped.append((node, found[0]))
            return
        # `<model>.get_input_embeddings().weight.data`
        if not (isinstance(owner, cst.Attribute) and owner.attr.value in WEIGHTS):
            return
        getter = owner.value
        if isinstance(getter, cst.Call) and method_name(getter) in EMBEDDING_GETTERS and not getter.args:
            assert isinstance(getter.func, cst.Attribute)
            self.embeddings.append((node, getter.func.value))

    def leave_Module(self, original_node: cst.Module) -> None:
        if self.knows_partitions:
            return
        for node, engine in self.looped:
            if zero_stage(self.context, engine) == 3:
                shown = evidence(self.context, engine)
                self.report(node, self.message + shown.suffix, related=list(shown.related))
        for node, model in self.embeddings:
            self._embedding(node, model)

    def _embedding(self, node: cst.Attribute, model: cst.BaseExpression) -> None:
        facts = self.facts
        answer = facts.role_of(model, at=node)
        if answer is not None and answer.engine is not None:
            after = answer.role in ENGINE_ROLES or (
                answer.role is Role.RAW_MODEL and self.loop.after_initialize(answer.engine, node)
            )
            if after:
                if zero_stage(self.context, answer.engine) == 3:
                    shown = evidence(self.context, answer.engine)
                    self.report(node, self.message + shown.suffix, related=list(shown.related))
                return
            # the model before initialize: partitioned only if transformers built it so
        if not isinstance(model, cst.Name):
            return
        binding = facts.binding_at(model.value, facts.scope_at(node), facts.start(node))
        if binding is None:
            return
        if binding.kind is BindingKind.OTHER and isinstance(binding.value, cst.Call):
            loaded = self._partitioned_load(binding.value)
            if loaded is not None:
                self.report(node, self.message + loaded.suffix, related=list(loaded.related))
        elif binding.kind is BindingKind.PARAMETER:
            self._through_parameter(node, binding.scope.node, model.value)

    def _through_parameter(self, node: cst.Attribute, function: object, name: str) -> None:
        """`.data` of a helper's parameter: reported where a call of the helper in this file hands it a model
        loaded partitioned (the call named)."""
        facts = self.facts
        if not isinstance(function, cst.FunctionDef) or facts.scope_at(function) is not facts.module_scope:
            return
        position = _parameter_index(function, name)
        if position is None:
            return
        related: list[Related] = []
        suffix = ""
        for call in self.calls:
            if not (isinstance(call.func, cst.Name) and call.func.value == function.name.value):
                continue
            argument = _argument_value(call, position, name)
            if not isinstance(argument, cst.Name) or self._adds_no_token(function, call):
                continue
            value = facts.assigned_value(argument, call)
            shown = self._partitioned_load(value) if isinstance(value, cst.Call) else None
            if shown is None:
                continue
            start, _ = self.context.span(call)
            related.append(Related(self.context.path, start.line, start.column, "called with the model here"))
            related.extend(shown.related)
            suffix = suffix or shown.suffix
        if related:
            self.report(node, self.message + suffix, related=list(dict.fromkeys(related)))

    def _adds_no_token(self, function: cst.FunctionDef, call: cst.Call) -> bool:
        """The helper adds the special tokens a parameter holds (`tokenizer.add_special_tokens(tokens)`), and this
        call hands it only tokens every common tokenizer already has (`dict(pad_token="</s>")`, the tokenizer's own
        `eos_token`): nothing is added, and the rows it would edit never are."""
        for node in own_nodes(function.body):
            if not (isinstance(node, cst.Call) and method_name(node) == "add_special_tokens" and node.args):
                continue
            given = node.args[0].value
            position = _parameter_index(function, given.value) if isinstance(given, cst.Name) else None
            if position is None:
                return False
            assert isinstance(given, cst.Name)
            tokens = _argument_value(call, position, given.value)
            values = self._token_values(tokens, call) if tokens is not None else None
            return bool(values) and all(self._existing_token(value, call) for value in values or ())
        return False

    def _token_values(self, tokens: cst.BaseExpression, at: cst.CSTNode) -> list[cst.BaseExpression] | None:
        if isinstance(tokens, cst.Name):
            bound = self.facts.assigned_value(tokens, at)
            tokens = bound if bound is not None else tokens
        if isinstance(tokens, cst.Call) and isinstance(tokens.func, cst.Name) and tokens.func.value == "dict":
            if any(arg.keyword is None for arg in tokens.args):
                return None
            return [arg.value for arg in tokens.args]
        if isinstance(tokens, cst.Dict):
            if any(not isinstance(element, cst.DictElement) for element in tokens.elements):
                return None
            return [element.value for element in tokens.elements]
        return None

    def _existing_token(self, value: cst.BaseExpression, at: cst.CSTNode) -> bool:
        if isinstance(value, cst.Attribute):
            return value.attr.value in TOKENIZER_OWN_TOKENS
        if isinstance(value, cst.Name):
            bound = self.facts.assigned_value(value, at)
            value = bound if bound is not None else value
        return isinstance(value, cst.SimpleString) and value.evaluated_value in EXISTING_TOKENS

    def _partitioned_load(self, load: cst.Call) -> Evidence | None:
        """Where `load` is a `from_pretrained` under a ZeRO-3 config transformers already knows (so the model is
        built partitioned, inside `zero.Init`): the evidence for that stage; else None."""
        if not is_model_from_pretrained(self.context, load):
            return None
        scope = self.facts.scope_at(load)
        live = [
            source
            for source in self.sources.of_kind(*HF_KINDS)
            if _kept(source) and self.sources.in_scope_before(source, scope, load)
        ]
        if live:
            stage3 = [source for source in live if source.stage == 3 and not source.presumed]
            if not stage3:
                return None
            configs = [config for source in stage3 for config in source.configs]
            return config_evidence(configs, files=True) if configs else Evidence("", ())
        if not any(True for _ in self.sources.of_kind(*HF_KINDS)) and self._parsed_before(load):
            launched = [config for config in trainer_configs(self.context) if config.zero_stage == 3]
            if launched:
                return config_evidence(launched)
        return None

    def _parsed_before(self, load: cst.Call) -> bool:
        """The script builds its TrainingArguments with an `HfArgumentParser` before `load` (earlier in its
        function, or at module level above it)."""
        if not parses_training_arguments(self.context):
            return False
        facts = self.facts
        scope = facts.scope_at(load)
        for call in self.calls:
            if method_name(call) not in PARSE_METHODS:
                continue
            home = facts.scope_at(call)
            if (home is scope and facts.start(call) < facts.start(load)) or (
                home is facts.module_scope and scope is not facts.module_scope
            ):
                return True
        return False


def _kept(source: ZeroSource) -> bool:
    """An HfDeepSpeedConfig lives only while referenced (transformers keeps a weak reference): bound or returned."""
    return source.kind != "HfDeepSpeedConfig" or source.bound


def _parameter_index(function: cst.FunctionDef, name: str) -> int | None:
    for index, param in enumerate([*function.params.posonly_params, *function.params.params]):
        if param.name.value == name:
            return index
    return -1 if any(p.name.value == name for p in function.params.kwonly_params) else None


def _argument_value(call: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    found = argument(call, position, name)
    return found.value if found is not None else None
