"""Run by tests/test_loop_runtime.py in a child process: DeepSpeed's behaviour behind DSL301, DSL305, DSL307, DSL308.

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


def direct_backward() -> dict[str, object]:
    """DSL301: loss.backward() on the engine's output without ZeRO; DSL305: the default gradient_clipping."""
    engine = engine_for(1)
    loss = engine(torch.randn(2, 4)).pow(2).mean()
    error = ""
    try:
        loss.backward()
    except RuntimeError as raised:
        error = str(raised)
    return {"error": error, "default_gradient_clipping": engine.gradient_clipping()}


def zero3_weights(raw: bool) -> list[float]:
    """DSL307: four micro-steps under ZeRO-3, the forward through the engine or through the raw model."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
    config = {
        **CONFIG,
        "zero_optimization": {"stage": 3},
        "optimizer": {"type": "SGD", "params": {"lr": 0.1}},
        "zero_allow_untested_optimizer": True,
    }
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    inputs = torch.randn(4, 2, 4, generator=torch.Generator().manual_seed(1))
    for i in range(4):
        output = model(inputs[i]) if raw else engine(inputs[i])
        engine.backward(output.pow(2).mean())
        engine.step()
    parameters = list(engine.module.parameters())
    with deepspeed.zero.GatheredParameters(parameters):
        return [x for p in parameters for x in p.detach().flatten().tolist()]


def clip_norm_under_zero_2() -> dict[str, object]:
    """DSL305: after engine.backward under ZeRO-2, param.grad is None and clip_grad_norm_ finds nothing."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    config = {
        **CONFIG,
        "zero_optimization": {"stage": 2},
        "optimizer": {"type": "Adam", "params": {"torch_adam": True}},
    }
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    engine.backward(engine(torch.randn(2, 4)).sum())
    grads_none = all(p.grad is None for p in model.parameters())
    return {"grads_none": grads_none, "norm": float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))}


def zero_init_under_stage_2() -> dict[str, object]:
    """DSL308: zero.Init with a stage-2 config, then the engine's first forward."""
    config = {
        **CONFIG,
        "zero_optimization": {"stage": 2},
        "optimizer": {"type": "Adam", "params": {"torch_adam": True}},
    }
    with deepspeed.zero.Init(config_dict_or_path=config):
        model = torch.nn.Linear(4, 2)
    numel = model.weight.data.numel()
    try:
        engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
        engine(torch.randn(2, 4))
    except RuntimeError as error:
        return {"numel": numel, "error": str(error)}
    return {"numel": numel, "error": ""}


if __name__ == "__main__":
    through_engine, through_model = zero3_weights(raw=False), zero3_weights(raw=True)
    difference = max(abs(a - b) for a, b in zip(through_engine, through_model, strict=True))
    print(
        json.dumps(
            {
                "direct_backward": direct_backward(),
                "zero3_raw_forward_difference": difference,
                "zero_init_stage_2": zero_init_under_stage_2(),
                "clip_under_zero_2": clip_norm_under_zero_2(),
            }
        )
    )
