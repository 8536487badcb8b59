"""The device an expression names (`dslint.script.devices`, `dslint.model.values.Device`): one reader for the
device rules (DSL101 and DSL002's moves, DSL103, DSL201)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from dslint.model.values import CPU, CURRENT_CUDA, Device, DeviceIndex
from dslint.script.collect import collect_facts
from dslint.script.devices import devices_of, is_cpu, is_cuda_device, is_unindexed_cuda

PRELUDE = """
import os
import torch
import torch.distributed as dist
from deepspeed.accelerator import get_accelerator
local_rank = int(os.environ["LOCAL_RANK"])
rank = dist.get_rank()
env_rank = int(os.getenv("RANK", "0"))
picked = "cuda" if torch.cuda.is_available() else "cpu"
gpu = torch.device("cuda")
"""


def _devices(expression: str) -> frozenset[Device]:
    module = cst.parse_module(textwrap.dedent(PRELUDE) + f"probe = {expression}\n")
    facts = collect_facts(module)
    statement = module.body[-1]
    assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign)
    value = statement.body[0].value
    return devices_of(facts, value, value)


def cuda(index: DeviceIndex, number: int | None = None) -> frozenset[Device]:
    return frozenset({Device(True, index, number)})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('"cpu"', frozenset({CPU})),
        ('torch.device("cpu")', frozenset({CPU})),
        ('"cuda"', frozenset({CURRENT_CUDA})),
        ('torch.device("cuda")', frozenset({CURRENT_CUDA})),
        ('torch.device(type="cuda")', frozenset({CURRENT_CUDA})),
        ("gpu", frozenset({CURRENT_CUDA})),
        ("get_accelerator().device_name()", frozenset({CURRENT_CUDA})),
        ("picked", frozenset({CURRENT_CUDA, CPU})),
        ('"cuda:1"', cuda(DeviceIndex.CONSTANT, 1)),
        ('torch.device("cuda", 0)', cuda(DeviceIndex.CONSTANT, 0)),
        ("torch.device(2)", cuda(DeviceIndex.CONSTANT, 2)),
        ('f"cuda:{local_rank}"', cuda(DeviceIndex.LOCAL_RANK)),
        ('torch.device("cuda", args.local_rank)', cuda(DeviceIndex.LOCAL_RANK)),
        ("torch.device(local_rank)", cuda(DeviceIndex.LOCAL_RANK)),
        ("get_accelerator().device_name(local_rank)", cuda(DeviceIndex.LOCAL_RANK)),
        ('"cuda:{}".format(rank)', cuda(DeviceIndex.GLOBAL_RANK)),
        ('"cuda:%d" % env_rank', cuda(DeviceIndex.GLOBAL_RANK)),
        ('f"cuda:{dist.get_rank()}"', cuda(DeviceIndex.GLOBAL_RANK)),
        ('f"cuda:{args.gpu}"', cuda(DeviceIndex.OTHER)),
        # not a device that can be known: a parameter, a run-time string, something else entirely
        ("args.device", frozenset()),
        ("torch.device(args.device)", frozenset()),
        ('"cpu:{}".format(rank)', frozenset()),
        ("torch.float16", frozenset()),
    ],
)
def test_the_device_an_expression_names(expression: str, expected: frozenset[Device]) -> None:
    assert _devices(expression) == expected


def test_the_questions_the_rules_ask() -> None:
    module = cst.parse_module(textwrap.dedent(PRELUDE) + 'a = "cuda"\nb = torch.device("cpu")\nc = picked\n')
    facts = collect_facts(module)
    values = {}
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign):
            target = statement.body[0].targets[0].target
            if isinstance(target, cst.Name):
                values[target.value] = statement.body[0].value
    a, b, c = values["a"], values["b"], values["c"]
    assert is_unindexed_cuda(facts, a, a) and is_cuda_device(facts, a, a) and not is_cpu(facts, a, a)
    assert is_cpu(facts, b, b) and not is_cuda_device(facts, b, b)
    assert is_unindexed_cuda(facts, c, c) and not is_cpu(facts, c, c)  # on one path


def test_an_attribute_set_in_another_method_names_every_device_its_assignments_name() -> None:
    """`self.device` set in `__init__` to the rank's GPU when CUDA is there, else the CPU: a CUDA device on some
    path where another method reads it; one assignment the reader cannot know leaves nothing known."""
    code = textwrap.dedent(
        """
        import torch
        class Trainer:
            def __init__(self, rank, other):
                if torch.cuda.is_available():
                    self.device = torch.device(f"cuda:{rank}")
                else:
                    self.device = torch.device("cpu")
                self.spare = other
            def load(self, path):
                return torch.load(path, map_location=self.device), self.spare
        """
    )
    module = cst.parse_module(code)
    facts = collect_facts(module)
    load = module.body[-1].body.body[1]  # the `load` method
    statement = load.body.body[0]
    returned = statement.body[0].value
    loaded, spare = (element.value for element in returned.elements)
    device = next(a.value for a in loaded.args if a.keyword is not None and a.keyword.value == "map_location")
    assert is_cuda_device(facts, device, loaded) and not is_cpu(facts, device, loaded)
    assert devices_of(facts, spare, spare) == frozenset()
