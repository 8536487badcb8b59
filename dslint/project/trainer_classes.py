"""The project's own Hugging Face Trainer classes that a file imports from another module:

    # training/simpo_trainer.py
    from transformers import Trainer
    class SimPOTrainer(Trainer): ...          # keeps the Trainer's save_model / _save

    # training/logo_train.py
    from simpo_trainer import SimPOTrainer
    class LOGOTrainer(SimPOTrainer): ...      # a Trainer too: saves, gathers and builds the engine as it does

Each name a file imports that resolves to a project class (`model/classes.Hierarchy`, re-exports followed) is
followed up its bases, a few levels, to a transformers or TRL `*Trainer` (`library.is_trainer_class_name`, read
through the defining module's imports); a class on the way that defines `save_model` or `_save` saves its own way
and is not one. The script's per-file view (`script/hf_trainers.py`) counts these names as it counts the
library's own trainers and the script's classes deriving from them.
"""

from __future__ import annotations

from dslint.model.classes import MAX_DEPTH, ClassRef, Hierarchy
from dslint.model.library import is_trainer_class_name
from dslint.model.summary import ModuleSummary, qualified_dotted

_SAVING_METHODS = ("save_model", "_save")


def imported_trainer_classes(module: ModuleSummary, hierarchy: Hierarchy) -> frozenset[str]:
    """The local names `module` imports of project classes that are Hugging Face trainers keeping its saving."""
    found: set[str] = set()
    memo: dict[ClassRef, bool] = {}
    for local, dotted in module.imports.items():
        if not local[:1].isupper():
            continue  # a class, by the convention every trainer follows; not a module or a function
        target = hierarchy.follow(dotted, module.path)
        if target is None or target[1] not in target[0].classes:
            continue
        if _trainer(hierarchy, (target[0].path, target[1]), memo, 0):
            found.add(local)
    return frozenset(found)


def _trainer(hierarchy: Hierarchy, cls: ClassRef, memo: dict[ClassRef, bool], depth: int) -> bool:
    if cls in memo:
        return memo[cls]
    memo[cls] = False  # a cycle of bases ends here
    module = hierarchy.store.get(cls[0])
    if module is None or depth > MAX_DEPTH:
        return False
    if any(f"{cls[1]}.{name}" in module.functions for name in _SAVING_METHODS):
        return False
    answer = False
    for written in module.classes.get(cls[1], ()):
        library = qualified_dotted(module.imports, written)
        if library is not None and is_trainer_class_name(library):
            answer = True
            break
        base = hierarchy.resolve_class(module, written)
        if base is not None and _trainer(hierarchy, base, memo, depth + 1):
            answer = True
            break
    memo[cls] = answer
    return answer
