"""Properties of the checkpoint fixes over generated variants of each bad pattern.

Variants: import aliases (`import torch as th`, `from torch import load`, `import deepspeed as ds`,
`from deepspeed import initialize`), engine names and `self.` attributes, module level / function / method /
an `if` block, keyword or positional `map_location`, CUDA spellings, DeepSpeed checkpoint paths as
`os.path.join`, f-strings and pathlib, plain files, the loaded dict inline or through a variable, `["module"]`
or not, `strict=`. For every variant: the rules find it, the fixed text compiles, fixing again changes
nothing, and no finding of a rule whose fix was applied is left.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.fix.loop import fix_source
from dslint.lint.file import lint_text

CHECKPOINT_CODES = frozenset({"DSL201", "DSL202", "DSL203", "DSL205", "DSL206"})
SETTINGS = settings(max_examples=examples(30), suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Imports:
    lines: str
    load: str  # how torch.load is spelled
    device: str  # how torch.device is spelled
    initialize: str


IMPORTS = st.sampled_from(
    [
        Imports("import os\nimport torch\nimport deepspeed\n", "torch.load", "torch.device", "deepspeed.initialize"),
        Imports("import os\nimport torch as th\nimport deepspeed as ds\n", "th.load", "th.device", "ds.initialize"),
        Imports(
            "import os\nimport torch\nfrom torch import load as tload\nfrom deepspeed import initialize\n",
            "tload",
            "torch.device",
            "initialize",
        ),
    ]
)
ENGINE_NAMES = st.sampled_from(["engine", "model_engine", "model", "ds_engine"])
PLACES = st.sampled_from(["module", "function", "method", "if"])


def _place(body: list[str], place: str, imports: Imports) -> str:
    """Put `body` (statements using `ENGINE` and `MODEL`) at module level, in a function, method or if block."""
    if place == "method":
        lines = [line.replace("ENGINE", "self.engine").replace("MODEL", "self.net") for line in body]
        code = "class Trainer:\n    def run(self, args):\n" + "".join(f"        {line}\n" for line in lines)
    elif place == "function":
        code = "def main(args):\n" + "".join(f"    {line}\n" for line in body)
    elif place == "if":
        code = "".join(f"{line}\n" for line in body[:2]) + "if args.resume:\n"
        code += "".join(f"    {line}\n" for line in body[2:])
    else:
        code = "".join(f"{line}\n" for line in body)
    return imports.lines + code


@st.composite
def torch_load_scripts(draw: st.DrawFn) -> str:
    imports = draw(IMPORTS)
    engine = draw(ENGINE_NAMES)
    device = draw(
        st.sampled_from(
            [None, '"cuda"', '"cuda:0"', 'f"cuda:{args.local_rank}"', f'{imports.device}("cuda", args.local_rank)']
        )
    )
    positional = draw(st.booleans())
    extra = draw(st.sampled_from(["", ", weights_only=True"]))
    if device is None:
        call = f"{imports.load}(args.path{extra})"
    elif positional:
        call = f"{imports.load}(args.path, {device}{extra})"
    else:
        call = f"{imports.load}(args.path, map_location={device}{extra})"
    body = [
        "MODEL = Net()",
        f"ENGINE, optimizer, _, _ = {imports.initialize}(model=MODEL, config=args.ds_config)",
        f"state = {call}",
        "use(state)",
    ]
    return _place(body, draw(PLACES), imports).replace("ENGINE", engine).replace("MODEL", "net")


@st.composite
def load_state_dict_scripts(draw: st.DrawFn) -> str:
    imports = draw(IMPORTS)
    engine = draw(ENGINE_NAMES)
    directory = draw(st.sampled_from(["args.ckpt_dir", "ckpt_root"]))
    path = draw(
        st.sampled_from(
            [
                f'os.path.join({directory}, tag, "mp_rank_00_model_states.pt")',
                f'f"{{{directory}}}/{{tag}}/mp_rank_00_model_states.pt"',
                f'os.path.join({directory}, tag, "zero_pp_rank_0_mp_rank_00_model_states.pt")',
                "args.weights",
                '"pretrained/pytorch_model.bin"',
            ]
        )
    )
    map_location = draw(st.sampled_from(["", ', map_location="cpu"', ', map_location="cuda"']))
    selector = draw(st.sampled_from(['["module"]', ""]))
    strict = draw(st.sampled_from(["", ", strict=False"]))
    receiver = draw(st.sampled_from(["ENGINE.module", "MODEL"]))
    inline = draw(st.booleans())
    load = f"{imports.load}({path}{map_location})"
    body = [
        "MODEL = Net()",
        f"ENGINE, optimizer, _, _ = {imports.initialize}(model=MODEL, config=args.ds_config)",
        f'tag = "global_step{draw(st.integers(1, 999))}"',
    ]
    if inline:
        body.append(f"{receiver}.load_state_dict({load}{selector}{strict})")
    else:
        body += [f"state = {load}", f"{receiver}.load_state_dict(state{selector}{strict})"]
    body.append("train(ENGINE)")
    place = draw(PLACES)
    code = _place(body, place, imports)
    if place != "method":
        code = code.replace("ENGINE", engine).replace("MODEL", "net")
    return 'ckpt_root = "checkpoints"\n' + code if "ckpt_root" in code else code


@st.composite
def load_checkpoint_scripts(draw: st.DrawFn) -> str:
    imports = draw(IMPORTS)
    engine = draw(ENGINE_NAMES)
    target = draw(
        st.sampled_from(
            [
                "args.load_dir",
                '"ckpt/global_step5/mp_rank_00_model_states.pt"',
                'os.path.join(args.out, "model.safetensors")',
                'args.out + "/weights.pth"',
            ]
        )
    )
    form = draw(st.sampled_from(["{call}", "load_path, client_state = {call}"]))
    if form != "{call}" and target == "args.load_dir":
        form = "{call}"  # a checked directory load is correct: nothing to fix
    keyword = draw(st.sampled_from(["", ", load_module_only=True", ", tag=args.tag"]))
    call = f"ENGINE.load_checkpoint({target}{keyword})"
    body = [
        "MODEL = Net()",
        f"ENGINE, optimizer, _, _ = {imports.initialize}(model=MODEL, config=args.ds_config)",
        form.format(call=call),
    ]
    code = _place(body, draw(PLACES), imports)
    return code.replace("ENGINE", engine).replace("MODEL", "net")


def _check(text: str) -> None:
    findings = {d.code for d in lint_text("train.py", text)} & CHECKPOINT_CODES
    assert findings, text
    outcome = fix_source("train.py", text, unsafe=True)
    assert outcome.error is None, f"{outcome.error}\n{text}"
    compile(outcome.text, "fixed.py", "exec", dont_inherit=True)
    again = fix_source("train.py", outcome.text, unsafe=True)
    assert again.text == outcome.text, f"not idempotent:\n{outcome.text}\n---\n{again.text}"
    fixed_codes = {d.code for d in outcome.applied}
    left = {d.code for d in outcome.remaining if d.fix is not None}
    assert not (fixed_codes & left), f"{fixed_codes & left} left fixable after fixing:\n{outcome.text}"


@SETTINGS
@given(torch_load_scripts())
def test_torch_load_variants_fix_cleanly(text: str) -> None:
    _check(text)
    outcome = fix_source("train.py", text)
    assert not {d.code for d in outcome.remaining} & {"DSL201", "DSL202"}, outcome.text


@SETTINGS
@given(load_state_dict_scripts())
def test_load_state_dict_variants_fix_cleanly(text: str) -> None:
    _check(text)


@SETTINGS
@given(load_checkpoint_scripts())
def test_load_checkpoint_variants_fix_cleanly(text: str) -> None:
    _check(text)


def test_checkpoint_directory_variant_becomes_load_checkpoint() -> None:
    text = textwrap.dedent(
        """\
        import os
        import torch as th
        import deepspeed as ds
        def main(args):
            net = Net()
            model_engine, optimizer, _, _ = ds.initialize(model=net, config=args.ds_config)
            tag = "global_step7"
            state = th.load(os.path.join(args.ckpt_dir, tag, "mp_rank_00_model_states.pt"))
            model_engine.module.load_state_dict(state["module"])
            train(model_engine)
        """
    )
    outcome = fix_source("train.py", text, unsafe=True)
    assert "model_engine.load_checkpoint(args.ckpt_dir, tag=tag, load_module_only=True" in outcome.text
    assert "th.load" not in outcome.text
