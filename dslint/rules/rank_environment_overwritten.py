"""DSL433: a script that sets RANK, LOCAL_RANK or WORLD_SIZE to a constant under a launcher that sets them."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Related, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid

# The variables every rank gets from DeepSpeed's launcher (`launcher/launch.py`), torchrun and accelerate launch.
RANK_VARIABLES = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE"})

_SCRIPT = """\
import os
import deepspeed
os.environ["RANK"] = "0"
os.environ["WORLD_SIZE"] = "1"
deepspeed.init_distributed()
"""
_TWO = (("run.sh", "deepspeed --num_gpus 2 train.py\n"),)


class RankEnvironmentOverwritten(ScriptRule):
    code = "DSL433"
    slug = "rank-environment-overwritten"
    message = "a constant rank variable under a multi-process launch: every process takes the same rank; drop it"
    severity = Severity.ERROR
    needs_engine = False
    # the variable's name is a string constant of the code: `RANK` is in `LOCAL_RANK` too
    required_tokens = (b"environ", b"RANK")
    alternative_tokens = ((b"environ", b"WORLD_SIZE"),)
    needs_several_processes = True
    # it reports only at an assignment to one of these keys (`environ["RANK"] = ...`)
    call_shapes = (Shape(stored_keys=tuple(sorted(RANK_VARIABLES))),)
    docs = RuleDocs(
        what="""
            Flags an assignment of a constant to `os.environ["RANK"]`, `["LOCAL_RANK"]` or `["WORLD_SIZE"]`
            in a script's module-level code (or its `if __name__ == "__main__":` block) that a launcher of the
            project starts as several processes (`deepspeed --num_gpus 2`, `torchrun --nproc_per_node 4`,
            `accelerate launch`, or `deepspeed` with no count, which starts one process per GPU it finds). The
            finding names the launch. An assignment under an `if` or a `try` (a fallback for a plain `python`
            run: `if "RANK" not in os.environ:`), `os.environ.setdefault`, a value read at run time, an
            assignment inside a function (which may run only on a one-process path), and a script started only
            by `python` are left alone.
        """,
        why="""
            The launchers give each process its own `RANK`, `LOCAL_RANK` and `WORLD_SIZE`
            (`deepspeed/launcher/launch.py` sets them per process, DeepSpeed 0.19.8; torchrun does the same).
            `deepspeed.init_distributed` and `torch.distributed` read them back from the environment, so a
            script that writes `RANK=0` and `WORLD_SIZE=1` over them makes every process rank 0 of a world of
            one: each trains alone on all the data (or they wait on each other's port), and a constant
            `LOCAL_RANK` puts every process on the same GPU.
        """,
        example="""
            os.environ["RANK"] = "0"
            os.environ["WORLD_SIZE"] = "1"
            deepspeed.init_distributed()
        """,
        use_instead="""
            deepspeed.init_distributed()  # the launcher has set RANK, LOCAL_RANK and WORLD_SIZE
        """,
    )
    valid = (
        Valid(_SCRIPT, files=(("run.sh", "python train.py\n"),)),
        Valid(_SCRIPT),
        Valid(_SCRIPT, files=(("run.sh", "deepspeed --num_gpus 1 train.py\n"),)),
        Valid(
            'import os\nif "RANK" not in os.environ:\n    os.environ["RANK"] = "0"\n'
            '    os.environ["WORLD_SIZE"] = "1"\nprint(1)\n',
            files=_TWO,
        ),
        Valid('import os\nos.environ.setdefault("RANK", "0")\nos.environ["MASTER_PORT"] = "29500"\n', files=_TWO),
        Valid('import os\nos.environ["LOCAL_RANK"] = str(args.local_rank)\n', files=_TWO),
        Valid(
            'import os\ndef single_gpu():\n    os.environ["RANK"] = "0"\n    os.environ["WORLD_SIZE"] = "1"\n',
            files=_TWO,
        ),
        Valid('import os\ntry:\n    import x\nexcept ImportError:\n    os.environ["RANK"] = "0"\n', files=_TWO),
    )
    invalid = (
        Invalid(_SCRIPT, lines=(3, 4), files=_TWO),
        Invalid(_SCRIPT, lines=(3, 4), files=(("run.sh", "deepspeed train.py\n"),)),
        Invalid(
            'from os import environ\nenviron["LOCAL_RANK"] = str(0)\n',
            lines=(2,),
            files=(("run.sh", "torchrun --nproc_per_node 4 train.py\n"),),
        ),
        Invalid(
            'import os\nif __name__ == "__main__":\n    os.environ["WORLD_SIZE"] = "1"\n',
            lines=(3,),
            files=_TWO,
        ),
    )

    _guarded = 0  # the `if`s (other than `__name__ == "__main__"`), `try`s, functions and classes around

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._guarded += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._guarded -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._guarded += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._guarded -= 1

    def visit_If(self, node: cst.If) -> None:
        if not _is_main_test(node.test):
            self._guarded += 1

    def leave_If(self, original_node: cst.If) -> None:
        if not _is_main_test(original_node.test):
            self._guarded -= 1

    def visit_Try(self, node: cst.Try) -> None:
        self._guarded += 1

    def leave_Try(self, original_node: cst.Try) -> None:
        self._guarded -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._guarded or not _constant(node.value):
            return
        project = self.facts.project
        if project is None:
            return
        several = [launch for launch in project.launches if launch.several_a_node]
        if not several:
            return
        for target in node.targets:
            name = self._rank_variable(target.target)
            if name is None:
                continue
            first = several[0]
            where = first.launch
            count = f"{first.ranks_per_node} processes a node" if first.ranks_per_node else "one process a GPU"
            message = (
                f"{name} set to a constant under {count}: every process takes the same one; drop it "
                f"({where.path}:{where.line})"
            )
            related = tuple(Related(s.launch.path, s.launch.line, s.launch.column, s.world_source) for s in several)
            self.report(target.target, message, related=related)

    def _rank_variable(self, target: cst.BaseExpression) -> str | None:
        if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
            return None
        if self.facts.qualified(target.value) != "os.environ":
            return None
        element = target.slice[0].slice
        if not isinstance(element, cst.Index) or not isinstance(element.value, cst.SimpleString):
            return None
        key = element.value.evaluated_value
        return key if isinstance(key, str) and key in RANK_VARIABLES else None


def _constant(value: cst.BaseExpression) -> bool:
    """A literal, or `str(<literal>)`."""
    if isinstance(value, (cst.SimpleString, cst.Integer)):
        return True
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "str":
        return len(value.args) == 1 and isinstance(value.args[0].value, (cst.SimpleString, cst.Integer))
    return False


def _is_main_test(test: cst.BaseExpression) -> bool:
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
    )
