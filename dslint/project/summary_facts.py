"""The facts of a project's code read from its module summaries alone (the loads of files holding GPU or CPU data,
the parameters every caller fills with a CUDA device): what the project index computes from the `SummaryStore`
and nothing else, so the same in any process holding the sources. `index.py` has them read by whichever side of
its build gets there first (`beside.Claim`): the launch half in the forked child, or the caller once its engine
fixpoint is done."""

from __future__ import annotations

from dataclasses import dataclass

from dslint.diagnostics import Related
from dslint.model.cpu_saves import CpuFile, cpu_loads
from dslint.model.gpu_saves import GpuFile, gpu_loads
from dslint.model.summary import SummaryStore
from dslint.project.inputs import shown_path
from dslint.project.passed_devices import cuda_parameters


@dataclass
class SummaryFacts:
    gpu_loads: dict[str, dict[int, GpuFile]]
    cpu_loads: dict[str, dict[int, CpuFile]]
    cuda_parameters: dict[str, dict[str, dict[str, Related]]]


def summary_facts(store: SummaryStore) -> SummaryFacts:
    paths = list(store.sources)
    return SummaryFacts(gpu_loads(store, paths), cpu_loads(store, paths), cuda_parameters(store))


def gpu_file(found: GpuFile) -> tuple[str, Related | None]:
    """A GPU load's fact (`ProjectFacts.gpu_loads`): the file it reads, and where that file is saved."""
    if found.path is None:
        return f"{found.name}: DeepSpeed's checkpoint file, saved from GPU tensors", None
    where = Related(shown_path(found.path), found.line, 1, f"torch.save of the engine's state as {found.name}")
    return f"{found.name} holds the engine's GPU tensors, saved at {where.path}:{where.line}", where
