"""The environment one DeepSpeed process needs on a CPU machine (GROUND_TRUTH.md, "Running DeepSpeed without a
GPU"): rank 0 of a world of one, a free port on loopback, the CPU accelerator."""

from __future__ import annotations

import os
import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def single_process_env(**extra: str) -> dict[str, str]:
    """This process's environment plus the variables of a one-process DeepSpeed run, and `extra`."""
    return {
        **os.environ,
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "DS_ACCELERATOR": "cpu",
        **extra,
    }
