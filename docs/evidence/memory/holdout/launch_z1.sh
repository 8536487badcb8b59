#!/bin/bash
# One GPU, ZeRO-1, bf16.
deepspeed --num_gpus 1 train.py --deepspeed --deepspeed_config configs/z1_bf16.json "$@"
