"""DSL430: a Python interpreter written between the `deepspeed` launcher and the script."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PROJECT = (("train.py", "import argparse\nimport deepspeed\n"), ("ds.json", "{}\n"))


class InterpreterGivenToDeepspeed(LaunchRule):
    code = "DSL430"
    slug = "interpreter-given-to-deepspeed"
    kind = "interpreter"
    message = "deepspeed takes this interpreter as the script to run (no such file); drop it"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a `deepspeed` launch command (in a shell script, a Makefile recipe, a README's or a guide's
            code block) whose first word after the launcher's own options is a Python interpreter (`python`,
            `python3`, `python3.10`, a path ending in one): `deepspeed python train.py`. A command with
            `--no_python` (the launcher then runs the program itself) is left alone.
        """,
        why="""
            The runner (`deepspeed/launcher/runner.py`, DeepSpeed 0.19.8) reads its first positional word as
            `user_script` and everything after it as the script's arguments; `launcher/launch.py` then starts
            each rank as `sys.executable -u <user_script> --local_rank=N <arguments>`. With `python` as the user
            script, every rank runs `python -u python --local_rank=N train.py ...`, and Python stops at once:
            it cannot open a file named `python`. The launcher already runs the script with the interpreter it
            was installed with; write the script right after the launcher's options.
        """,
        example="""
            deepspeed --num_gpus 2 python train.py --deepspeed ds.json
        """,
        use_instead="""
            deepspeed --num_gpus 2 train.py --deepspeed ds.json
        """,
    )
    valid = (
        Valid("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("deepspeed --no_python python train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("python -m torch.distributed.run --nproc_per_node 2 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("torchrun --nproc_per_node 2 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("deepspeed --launcher_args python train.py --deepspeed ds.json\n", files=_PROJECT),
    )
    invalid = (
        Invalid("deepspeed python train.py --deepspeed ds.json\n", lines=(1,), files=_PROJECT),
        Invalid(
            "deepspeed --num_gpus 2 --master_port=29501 --no_ssh_check \\\n    python3 train.py --deepspeed ds.json\n",
            lines=(2,),
            files=_PROJECT,
        ),
        Invalid("CUDA_VISIBLE_DEVICES=0 deepspeed /usr/bin/python3.10 train.py\n", lines=(1,), files=_PROJECT),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        return f"deepspeed takes {issue.detail!r} as the script to run (no such file); drop it before the script"
