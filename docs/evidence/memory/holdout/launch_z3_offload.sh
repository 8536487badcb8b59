#!/bin/bash
# One GPU, ZeRO-3 with parameters and optimizer offloaded to the CPU.
deepspeed --include localhost:0 train.py --deepspeed --deepspeed_config configs/z3_offload_all.json "$@"
