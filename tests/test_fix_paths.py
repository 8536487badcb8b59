"""A fix must not change code it did not flag: properties over generated training loops.

Loops are composed from a grammar of the statements real scripts use: forward passes, divisions of the loss by
the accumulation steps (plain, in place, under `if args.gradient_accumulation_steps > 1:`, into another name),
backward forms (`engine.backward`, `loss.backward()`, fp16 branches with `optimizer.backward(loss)`), logging,
`engine.step()`, optimizer and scheduler calls, clipping, each perhaps under an accumulation test, with the
engine named `engine`, `model` (rebound by initialize), `model_engine` or `self.engine`.

After all fixes (safe and unsafe):
- no block holds only `pass`;
- every value that reaches a path no fix rewrote is unchanged. This is checked by running both scripts, the
  original and the fixed, against recording stand-ins for DeepSpeed (no torch, no deepspeed) for every
  combination of `args.fp16` and `args.gradient_accumulation_steps`: the values given to
  `optimizer.backward`, logged with `.item()` or `print`, and returned must be the same. (A division that a
  fix removes while the divided loss still reaches the fp16 branch changes what `optimizer.backward` gets.)
"""

from __future__ import annotations

import builtins
import textwrap
import types
from pathlib import Path
from typing import Any

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.fix.edits import pass_only_blocks
from dslint.fix.loop import fix_source, lint_text
from dslint.script.collect import collect_facts
from dslint.script.value_flow import value_flow

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])

GAS = "args.gradient_accumulation_steps"
ACCUMULATION_TEST = f"if (step + 1) % {GAS} == 0:"
CONFIGS = (
    '"ds_config.json"',
    '{"train_batch_size": 8, "gradient_accumulation_steps": 4}',
    '{"train_batch_size": 8, "gradient_accumulation_steps": 4, "fp16": {"enabled": True}}',
    '{"train_batch_size": 8, "zero_optimization": {"stage": 0}}',
)


def _indent(lines: list[str], depth: int = 1) -> list[str]:
    return ["    " * depth + line for line in lines]


@st.composite
def training_scripts(draw: st.DrawFn) -> str:
    engine = draw(st.sampled_from(["engine", "model", "model_engine", "self.engine"]))
    config = draw(st.sampled_from(CONFIGS))
    body: list[str] = []
    if draw(st.booleans()):
        body.append(f"loss = {engine}(batch)")
    else:
        body += [f"outputs = {engine}(batch)", "loss = outputs.loss"]
    loss = "loss"
    division = draw(st.sampled_from(["none", "assign", "inplace", "guarded", "guarded_inplace", "other_name"]))
    if division == "assign":
        body.append(f"loss = loss / {GAS}")
    elif division == "inplace":
        body.append(f"loss /= {GAS}")
    elif division == "guarded":
        body += [f"if {GAS} > 1:", f"    loss = loss / {GAS}"]
    elif division == "guarded_inplace":
        body += [f"if {GAS} > 1:", f"    loss /= {GAS}"]
    elif division == "other_name":
        body.append(f"scaled = loss / {GAS}")
        loss = "scaled"
    logs = draw(st.lists(st.sampled_from([f"tr_loss += {loss}.item()", f"print({loss})"]), max_size=2))
    log_before = draw(st.booleans())
    if log_before:
        body += logs
    backward = draw(
        st.sampled_from(
            [
                [f"{engine}.backward({loss})"],
                [f"{loss}.backward()"],
                ["if args.fp16:", f"    optimizer.backward({loss})", "else:", f"    {loss}.backward()"],
                ["if args.fp16:", f"    optimizer.backward({loss})", "else:", f"    {engine}.backward({loss})"],
                ["if args.fp16:", f"    {engine}.backward({loss})", "else:", f"    {loss}.backward()"],
                [f"{engine}.backward({loss} / {GAS})"],
            ]
        )
    )
    body += backward
    if not log_before:
        body += logs
    calls = [
        f"{engine}.step()",
        "optimizer.step()",
        "optimizer.zero_grad()",
        "scheduler.step()",
        f"torch.nn.utils.clip_grad_norm_({engine}.parameters(), 1.0)",
    ]
    plain = draw(st.lists(st.sampled_from(calls), max_size=3, unique=True))
    guarded = draw(st.lists(st.sampled_from([*calls, "global_step += 1"]), max_size=3, unique=True))
    body += plain
    if guarded:
        body.append(ACCUMULATION_TEST)
        body += _indent(guarded)
    loop = ["for step, batch in enumerate(loader):", *_indent(body)]
    initialize = f"deepspeed.initialize(args=args, model=model, model_parameters=params, config={config})"
    returned = "return tr_loss, global_step"
    if engine == "self.engine":
        lines = [
            "class Trainer:",
            "    def __init__(self, args, model, params):",
            f"        self.engine, self.optimizer, _, self.scheduler = {initialize}",
            "    def train(self, args, loader):",
            "        optimizer, scheduler = self.optimizer, self.scheduler",
            "        tr_loss, global_step = 0.0, 0",
            *_indent(loop, 2),
            f"        {returned}",
            "def train(args, model, params, loader):",
            "    return Trainer(args, model, params).train(args, loader)",
        ]
    else:
        lines = [
            "def train(args, model, params, loader):",
            f"    {engine}, optimizer, _, scheduler = {initialize}",
            "    tr_loss, global_step = 0.0, 0",
            *_indent(loop),
            f"    {returned}",
        ]
    return "import deepspeed\nimport torch\n\n\n" + "\n".join(lines) + "\n"


# --- recording stand-ins for torch and DeepSpeed -------------------------------------------------------------
class _Run:
    def __init__(self, gas: int) -> None:
        self.gas = gas
        self.events: list[tuple[str, float]] = []


class _Loss:
    def __init__(self, value: float, run: _Run) -> None:
        self.value, self.run = value, run

    @property
    def loss(self) -> _Loss:
        return self

    def __truediv__(self, other: float) -> _Loss:
        return _Loss(self.value / other, self.run)

    def item(self) -> float:
        self.run.events.append(("item", self.value))
        return self.value

    def backward(self) -> None:
        self.run.events.append(("tensor.backward", self.value))


class _Engine:
    def __init__(self, run: _Run) -> None:
        self.run = run
        self.module = self

    def __call__(self, batch: float) -> _Loss:
        return _Loss(batch, self.run)

    def backward(self, loss: _Loss, **_: Any) -> None:
        self.run.events.append(("engine.backward", loss.value / self.run.gas))

    def step(self) -> None:
        self.run.events.append(("engine.step", 0.0))

    def parameters(self) -> list[Any]:
        return []


class _Optimizer:
    def __init__(self, run: _Run) -> None:
        self.run = run

    def backward(self, loss: _Loss) -> None:
        self.run.events.append(("optimizer.backward", loss.value))

    def step(self) -> None:
        self.run.events.append(("optimizer.step", 0.0))

    def zero_grad(self) -> None:
        self.run.events.append(("optimizer.zero_grad", 0.0))


class _Scheduler:
    def step(self) -> None:
        pass


UNTOUCHED_SINKS = frozenset({"optimizer.backward", "item", "print"})


def _observe(script: str, fp16: bool, gas: int) -> tuple[list[tuple[str, float]], Any]:
    """Run `script`'s `train` against the stand-ins; the values that reached paths no fix rewrites."""
    run = _Run(gas)

    def initialize(**_: Any) -> tuple[Any, ...]:
        return _Engine(run), _Optimizer(run), None, _Scheduler()

    fakes = {
        "deepspeed": types.SimpleNamespace(initialize=initialize),
        "torch": types.SimpleNamespace(
            nn=types.SimpleNamespace(utils=types.SimpleNamespace(clip_grad_norm_=lambda *a, **k: None))
        ),
    }

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        return fakes[name]

    def fake_print(*values: Any) -> None:
        run.events.append(("print", values[0].value if isinstance(values[0], _Loss) else values[0]))

    namespace: dict[str, Any] = {
        "__builtins__": {**vars(builtins), "__import__": fake_import, "print": fake_print},
        "__name__": "generated",
    }
    exec(compile(script, "<generated>", "exec"), namespace)
    args = types.SimpleNamespace(fp16=fp16, gradient_accumulation_steps=gas)
    result = namespace["train"](args, object(), [], [1.0, 2.0, 3.0, 4.0])
    return [event for event in run.events if event[0] in UNTOUCHED_SINKS], result


@SETTINGS
@given(training_scripts())
def test_fixes_keep_every_path_they_do_not_rewrite(script: str) -> None:
    outcome = fix_source("train.py", script, unsafe=True)
    assert outcome.error is None, outcome.error
    fixed = outcome.text
    assert pass_only_blocks(fixed) == pass_only_blocks(script) == 0, fixed
    for fp16 in (False, True):
        for gas in (1, 4):
            assert _observe(fixed, fp16, gas) == _observe(script, fp16, gas), (fp16, gas, script, fixed)


def test_the_old_chain_is_caught_by_the_oracle() -> None:
    """What DSL304 used to do on the BERT shape (the division gone, `pass` left) changes the fp16 path."""
    original = textwrap.dedent(
        f"""
        import deepspeed
        def train(args, model, params, loader):
            model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
            tr_loss, global_step = 0.0, 0
            for step, batch in enumerate(loader):
                loss = model(batch)
                if {GAS} > 1:
                    loss = loss / {GAS}
                if args.fp16:
                    optimizer.backward(loss)
                else:
                    loss.backward()
            return tr_loss, global_step
        """
    )
    old_fix = original.replace(f"loss = loss / {GAS}", "pass").replace("loss.backward()", "model.backward(loss)")
    assert pass_only_blocks(old_fix) == 1
    assert _observe(old_fix, True, 4) != _observe(original, True, 4)
    assert fix_source("train.py", original, unsafe=True).text == original


def test_bert_fixture_is_left_alone() -> None:
    path = ROOT / "fixtures" / "loop" / "bert_fp16_branches.py"
    text = path.read_text(encoding="utf-8")
    codes = {d.code for d in lint_text(str(path), text)}
    assert {"DSL301", "DSL302", "DSL304"} <= codes
    outcome = fix_source(str(path), text, unsafe=True)
    assert outcome.error is None and outcome.text == text


def test_emptied_if_goes_but_a_loop_body_is_never_emptied() -> None:
    emptied = textwrap.dedent(
        """
        import deepspeed
        def train(args, model, loader):
            engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model)
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
                if args.log:
                    optimizer.zero_grad()
        """
    )
    fixed = fix_source("train.py", emptied, unsafe=True).text
    assert "if args.log" not in fixed and "pass" not in fixed and "engine.step()" in fixed
    kept = emptied.replace("if args.log:", "if should_log(batch):")  # a test with a call stays, so no fix
    assert fix_source("train.py", kept, unsafe=True).text == kept
    with_pass = emptied.replace("if args.log:\n", "if args.log:\n            pass\n")
    assert with_pass != emptied
    assert fix_source("train.py", with_pass, unsafe=True).text == fixed  # `pass` is not something left
    loop_body = textwrap.dedent(
        """
        import deepspeed
        def train(args, model, loader):
            engine, optimizer, _, scheduler = deepspeed.initialize(args=args, model=model)
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
            for _ in range(args.warmup):
                scheduler.step()
        """
    )
    assert "DSL310" in {d.code for d in lint_text("train.py", loop_body)}
    assert fix_source("train.py", loop_body, unsafe=True).text == loop_body  # a loop body is never emptied


def _flow_of(code: str) -> tuple[cst.Module, Any]:
    module = cst.parse_module(textwrap.dedent(code))
    facts = collect_facts(module)
    function = module.body[0]
    assert isinstance(function, cst.FunctionDef)
    return module, value_flow(facts, function)


def _assignments(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Visitor(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            found.append(node)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            found.append(node)

    module.visit(Visitor())
    return found


def test_value_flow_follows_branches_and_loops() -> None:
    module, flow = _flow_of(
        """
        def f(a, xs):
            x = a
            if a:
                x = x / 2
            print(x)
            for item in xs:
                y = x
                x = item
                if item:
                    break
            return x, y
        """
    )
    first, halved, _, in_loop = _assignments(module)
    assert flow.reads_reached_by(first, "x") is not None
    halved_reads = flow.reads_reached_by(halved, "x")
    assert halved_reads is not None and len(halved_reads) == 3  # print(x), y = x, return x (no iteration)
    assert len(flow.reads_reached_by(in_loop, "x") or []) == 2  # y = x on the next iteration, return x


def test_value_flow_gives_up_on_captured_names() -> None:
    module, flow = _flow_of(
        """
        def f(a):
            x = a / 2
            g = lambda: x
            return g
        """
    )
    assert flow.reads_reached_by(_assignments(module)[0], "x") is None
