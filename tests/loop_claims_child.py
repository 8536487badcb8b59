"""Run by tests/test_loop_runtime.py in a child process: DeepSpeed's behaviour behind DSL301 and DSL303.

Prints one JSON object on its last line.
"""

import json

import deepspeed
import torch

CONFIG = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2, "steps_per_print": 1000}


def engine_for(seed: int) -> deepspeed.DeepSpeedEngine:
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 1, bias=False)
    engine, _, _, _ = deepspeed.initialize(
        model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), config=CONFIG
    )
    return engine


def step_under_accumulation_test() -> dict[str, object]:
    """DSL303: engine.step() only when (i + 1) % 2 == 0, with gradient_accumulation_steps 2, two micro-steps."""
    engine = engine_for(0)
    before = engine.module.weight.detach().clone()
    for i in range(2):
        engine.backward(engine(torch.randn(2, 4)).pow(2).mean())
        if (i + 1) % 2 == 0:
            engine.step()
    changed = not torch.equal(before, engine.module.weight.detach())
    return {"global_steps": engine.global_steps, "weights_changed": changed}


def direct_backward() -> str:
    """DSL301: loss.backward() on the engine's output without ZeRO."""
    engine = engine_for(1)
    loss = engine(torch.randn(2, 4)).pow(2).mean()
    try:
        loss.backward()
    except RuntimeError as error:
        return str(error)
    return ""


if __name__ == "__main__":
    print(json.dumps({"accumulation_test": step_under_accumulation_test(), "direct_backward": direct_backward()}))
