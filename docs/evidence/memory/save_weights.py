"""Write the fp32 state dict of fixtures/projects/memory/train.py's model (the same LlamaConfig), for the runs
that pass `--init_weights`: python save_weights.py OUT.pt"""

import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

config = LlamaConfig(
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=16,
    num_attention_heads=16,
    num_key_value_heads=4,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
)
model = LlamaForCausalLM(config)
print("parameters (transformers):", sum(p.numel() for p in model.parameters()))
torch.save(model.state_dict(), sys.argv[1])
