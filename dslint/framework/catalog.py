"""The rule catalog: every rule's code, and the byte strings a script must contain for each script rule to
fire (`ScriptRule.token_sets`), as plain data. Settings select codes and the prefilter settles a file that
no rule can touch from this table, without importing the rule modules (and libcst) at all.

It mirrors the registry (`dslint.framework.registry.all_rules`), which stays the truth: `tests/test_catalog.py`
fails, naming the line to add, when a rule is added, removed or changes its tokens without this table.
"""

from __future__ import annotations

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
)

# Script rules -> the sets of tokens each needs, all of one set (`ScriptRule.token_sets`; DSL001, DSL002 and DSL010
# are driver findings, not traversals).
SCRIPT_TOKENS: dict[str, tuple[tuple[bytes, ...], ...]] = {
    "DSL101": ((b"deepspeed", b"initialize"),),
    "DSL102": ((b"deepspeed", b"initialize"),),
    "DSL103": ((b"deepspeed", b"initialize"),),
    "DSL201": ((b"deepspeed", b"initialize"),),
    "DSL202": ((b"deepspeed", b"initialize"),),
    "DSL203": ((b"deepspeed", b"initialize"),),
    "DSL204": ((b"deepspeed", b"initialize"),),
    "DSL205": ((b"deepspeed", b"initialize"),),
    "DSL206": ((b"deepspeed", b"initialize"),),
    "DSL207": (
        (b"deepspeed", b"from_pretrained", b"device_map"),
        (b"HfDeepSpeedConfig", b"from_pretrained", b"device_map"),
    ),
    "DSL208": ((b"deepspeed", b"from_pretrained"), (b"HfDeepSpeedConfig",)),
    "DSL209": ((b"deepspeed", b"initialize"),),
    "DSL301": ((b"deepspeed", b"initialize"),),
    "DSL302": ((b"deepspeed", b"initialize"),),
    "DSL303": ((b"deepspeed", b"initialize"),),
    "DSL304": ((b"deepspeed", b"initialize"),),
    "DSL305": ((b"deepspeed", b"initialize"),),
    "DSL306": ((b"deepspeed", b"initialize"),),
    "DSL307": ((b"deepspeed", b"initialize"),),
    "DSL308": ((b"deepspeed", b"initialize"),),
    "DSL415": ((b"deepspeed", b"initialize"),),
}
