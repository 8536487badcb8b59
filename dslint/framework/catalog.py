"""The rule catalog: every rule's code, and what each script rule needs to fire (`ScriptRule.needs()`: the byte
strings a script must contain, an engine, ...), as plain data. Settings select codes and the prefilter settles a
file that no rule can touch from this table, without importing the rule modules (and libcst) at all.

It mirrors the registry (`dslint.framework.registry.all_rules`), which stays the truth: `tests/test_catalog.py`
fails, naming the line to add, when a rule is added, removed or changes its needs without this table.
"""

from __future__ import annotations

from dataclasses import dataclass

CODES: tuple[str, ...] = (
    "DSL001",
    "DSL002",
    "DSL010",
    "DSL101",
    "DSL102",
    "DSL103",
    "DSL201",
    "DSL202",
    "DSL203",
    "DSL204",
    "DSL205",
    "DSL206",
    "DSL207",
    "DSL208",
    "DSL209",
    "DSL214",
    "DSL301",
    "DSL302",
    "DSL303",
    "DSL304",
    "DSL305",
    "DSL306",
    "DSL307",
    "DSL308",
    "DSL400",
    "DSL401",
    "DSL402",
    "DSL403",
    "DSL404",
    "DSL405",
    "DSL406",
    "DSL407",
    "DSL408",
    "DSL409",
    "DSL410",
    "DSL411",
    "DSL412",
    "DSL413",
    "DSL414",
    "DSL415",
    "DSL416",
    "DSL420",
)


@dataclass(frozen=True)
class Needs:
    """What a script rule needs to possibly fire, as data (`ScriptRule.needs()`); `dslint.lint.activation` answers
    it at each level (the text, CPython's tree, the script's facts).

    tokens: byte strings all present in the file (once parsed: among the code's words, not only in comments);
    alternatives: other sets of byte strings, all of any one of which does as well as `tokens` (transformers'
    `HfDeepSpeedConfig` hands DeepSpeed a config in a file that never writes the lowercase word `deepspeed`);
    engine: a training engine, from this file's `deepspeed.initialize` or brought by the project index;
    inference_engine: the rule also runs wherever `deepspeed.init_inference` is called (its tokens, or an engine,
    then not needed); zero_source: the file hands DeepSpeed a ZeRO config itself (`deepspeed.initialize`,
    `HfDeepSpeedConfig`, a `*TrainingArguments`)."""

    tokens: tuple[bytes, ...]
    engine: bool = True
    inference_engine: bool = False
    zero_source: bool = False
    alternatives: tuple[tuple[bytes, ...], ...] = ()

    def token_sets(self) -> tuple[tuple[bytes, ...], ...]:
        return (self.tokens, *self.alternatives)


# Script rules -> what each needs (DSL001, DSL002 and DSL010 are driver findings, not traversals).
SCRIPT_NEEDS: dict[str, Needs] = {
    "DSL101": Needs((b"deepspeed", b"initialize"), inference_engine=True),
    "DSL102": Needs((b"deepspeed", b"initialize"), inference_engine=True),
    "DSL103": Needs((b"deepspeed", b"initialize"), inference_engine=True),
    "DSL201": Needs((b"deepspeed", b"initialize")),
    "DSL202": Needs((b"deepspeed", b"initialize")),
    "DSL203": Needs((b"deepspeed", b"initialize")),
    "DSL204": Needs((b"deepspeed", b"initialize")),
    "DSL205": Needs((b"deepspeed", b"initialize")),
    "DSL206": Needs((b"deepspeed", b"initialize")),
    "DSL207": Needs(
        (b"deepspeed", b"from_pretrained", b"device_map"),
        engine=False,
        zero_source=True,
        alternatives=((b"HfDeepSpeedConfig", b"from_pretrained", b"device_map"),),
    ),
    "DSL208": Needs(
        (b"deepspeed", b"from_pretrained"), engine=False, zero_source=True, alternatives=((b"HfDeepSpeedConfig",),)
    ),
    "DSL209": Needs((b"deepspeed", b"initialize")),
    "DSL214": Needs((b"DataParallel",)),
    "DSL301": Needs((b"deepspeed", b"initialize")),
    "DSL302": Needs((b"deepspeed", b"initialize")),
    "DSL303": Needs((b"deepspeed", b"initialize")),
    "DSL304": Needs((b"deepspeed", b"initialize")),
    "DSL305": Needs((b"deepspeed", b"initialize")),
    "DSL306": Needs((b"deepspeed", b"initialize")),
    "DSL307": Needs((b"deepspeed", b"initialize")),
    "DSL308": Needs((b"deepspeed", b"initialize")),
    "DSL415": Needs((b"deepspeed", b"initialize")),
}
