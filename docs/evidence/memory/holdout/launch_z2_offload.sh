#!/bin/bash
# One GPU, ZeRO-2 with the optimizer offloaded to the CPU.
torchrun --nproc_per_node 1 train.py --deepspeed --deepspeed_config configs/z2_offload_opt.json "$@"
