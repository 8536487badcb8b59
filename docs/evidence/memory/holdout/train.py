"""Hold-out project for `dslint memory`: a Qwen2-style decoder trained from scratch on random tokens.

Written for the held-out check in README.md (nothing in dslint was tuned to it): the architecture, micro batch,
sequence length and the three configs differ from fixtures/projects/memory.
"""

import argparse

import deepspeed
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

VOCAB = 48000
SEQ = 768


def parse():
    parser = argparse.ArgumentParser(description="Qwen2 hold-out training")
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--resume", default=None, help="a state dict to start from")
    parser.add_argument("--steps", type=int, default=20)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def batch(device, micro):
    tokens = torch.randint(0, VOCAB, (micro, SEQ + 1), device=device)
    return tokens[:, :-1], tokens[:, 1:]


def main():
    args = parse()
    config = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=26,
        num_attention_heads=16,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
    )
    model = Qwen2ForCausalLM(config)
    if args.resume is not None:
        weights = torch.load(args.resume)  # expect: DSL202
        model.load_state_dict(weights)
        del weights

    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    micro = engine.train_micro_batch_size_per_gpu()
    for step in range(args.steps):
        inputs, labels = batch(engine.device, micro)
        logits = engine(input_ids=inputs).logits
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, VOCAB), labels.reshape(-1))
        engine.backward(loss)
        engine.step()
        if engine.global_rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
