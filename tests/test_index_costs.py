"""What the project index costs, counted (never timed): which files the GPU-save reader parses. A file is parsed
only when its text could name a file holding GPU tensors; the findings stay those of a full read."""

from __future__ import annotations

from pathlib import Path

from dslint.model.gpu_saves import gpu_loads
from dslint.model.summary import SummaryStore

TRAIN = b"""import deepspeed
import torch

def main(model, args):
    engine, _, _, _ = deepspeed.initialize(model=model, config=args.config)
    torch.save(engine.module.state_dict(), f"{args.out}/weights_{args.step}.pt")
"""
LOADS_SAVED = b"""import torch

def restore(folder, step):
    return torch.load(f"{folder}/weights_{step}.pt")
"""
LOADS_DS_FILE = b"""import torch

def restore(folder):
    return torch.load(folder + "/mp_rank_00_model_states.pt")
"""
LOADS_OTHER = b"""import torch

def restore(folder):
    state = torch.load(folder + "/tokenizer.pt")
    return get_thing(state)
"""
NO_TORCH = b"""import pickle

def load(folder):
    return pickle.load(open(folder + "/weights_1.pt", "rb"))
"""
HELPER_LOAD = b"""import torch
from deepspeed.utils.zero_to_fp32 import get_model_state_file

def restore(folder):
    return torch.load(get_model_state_file(folder, 0))
"""
RELATIVE = b"""from . import torch_alias

def restore(folder, step):
    return torch_alias.load(f"{folder}/weights_{step}.pt")
"""


def _store(files: dict[str, bytes]) -> tuple[SummaryStore, list[str]]:
    store = SummaryStore({f"/p/{name}": data for name, data in files.items()}, lambda path: False)
    parsed: list[str] = []
    get = store.get

    def counted(path: str):  # type: ignore[no-untyped-def]
        if path not in store.summaries:
            parsed.append(Path(path).name)
        return get(path)

    store.get = counted  # type: ignore[method-assign]
    return store, parsed


def test_only_files_that_could_name_a_gpu_file_are_parsed() -> None:
    files = {
        "train.py": TRAIN,
        "saved.py": LOADS_SAVED,
        "ds_file.py": LOADS_DS_FILE,
        "other.py": LOADS_OTHER,
        "no_torch.py": NO_TORCH,
        "helper.py": HELPER_LOAD,
        "relative.py": RELATIVE,
    }
    store, parsed = _store(files)
    found = gpu_loads(store, list(store.sources))
    assert sorted(Path(p).name for p in found) == ["ds_file.py", "helper.py", "saved.py"]
    # other.py names only a file nothing saves from an engine (its `get_` is no DeepSpeed path helper),
    # no_torch.py never imports torch, relative.py calls the load of a sibling module (`torch_alias.load`, which
    # the summary qualifies as that module's, never `torch.load`): none is parsed
    assert sorted(parsed) == ["ds_file.py", "helper.py", "saved.py", "train.py"]
    assert len(parsed) == len(set(parsed))  # each file parsed once


def test_without_engine_saves_a_load_of_a_named_file_is_not_parsed() -> None:
    store, parsed = _store({"saved.py": LOADS_SAVED, "other.py": LOADS_OTHER})
    assert gpu_loads(store, list(store.sources)) == {}
    assert parsed == []


def test_a_module_may_call_torch_load_only_as_the_summary_would_qualify_it() -> None:
    from dslint.model.gpu_saves import may_call

    assert may_call(b"import torch\nx = torch.load(p)\n", "torch", "load", "/p/a.py")
    assert may_call(b"import torch as th\nx = th.load(p)\n", "torch", "load", "/p/a.py")
    assert may_call(b"from torch import (\n    save,\n    load,\n)\n", "torch", "load", "/p/a.py")
    assert not may_call(b"import torch\nx = engine.load_checkpoint(p)\n", "torch", "load", "/p/a.py")
    assert not may_call(b"from . import torch_alias\ntorch_alias.load(p)\n", "torch", "load", "/p/a.py")
    # inside torch's own package a relative import may bring the function: the text test of the name alone
    assert may_call(b"from .serialization import load\n", "torch", "load", "/site/torch/hub.py")
