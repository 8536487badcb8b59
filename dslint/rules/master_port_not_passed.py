"""DSL470: `MASTER_PORT` set for a `deepspeed` launch, which hands every rank its own `--master_port` instead."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue
from dslint.project.shell_directories import UNKNOWN_VALUE

_PROJECT = (("train.py", "import argparse\nimport deepspeed\n"), ("ds.json", "{}\n"))


class MasterPortNotPassed(LaunchRule):
    code = "DSL470"
    slug = "master-port-not-passed"
    kind = "master_port_unused"
    message = "deepspeed overwrites MASTER_PORT: every rank rendezvous on --master_port (29500 by default)"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags a `deepspeed` launch command (in a shell script or a Makefile recipe) run with `MASTER_PORT`
            in its environment (exported earlier in the launcher, or set on the command) and without the
            launcher's own `--master_port`. A port of 29500 (the default: nothing lost), another launcher
            backend (`--launcher`), a command under `srun` or `mpirun`, and commands in documents (README code
            blocks, notebooks: separate snippets) are left alone.
        """,
        why="""
            The runner (`deepspeed/launcher/runner.py`, DeepSpeed 0.19.8) reads the rendezvous port only from its
            `--master_port` option, whose default is 29500, and passes it to `launcher/launch.py`, which sets
            `MASTER_PORT` to that value in every rank's environment. The port the script chose, usually to stay
            clear of another job on the same machine, never reaches the ranks: the second job binds 29500 too and
            fails with "address already in use", or joins the other job's rendezvous.
        """,
        example="""
            export MASTER_PORT=29611
            deepspeed --num_gpus 4 train.py --deepspeed ds.json
        """,
        use_instead="""
            deepspeed --master_port 29611 --num_gpus 4 train.py --deepspeed ds.json
        """,
    )
    valid = (
        Valid("deepspeed --master_port 29611 --num_gpus 4 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid(
            "export MASTER_PORT=29611\ndeepspeed --master_port $MASTER_PORT train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid("export MASTER_PORT=29500\ndeepspeed train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("export MASTER_PORT=29611\ntorchrun --nproc_per_node 4 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("MASTER_PORT=29611\ndeepspeed train.py --deepspeed ds.json\n", files=_PROJECT),  # not exported
    )
    invalid = (
        Invalid(
            "export MASTER_PORT=29611\ndeepspeed --num_gpus 4 train.py --deepspeed ds.json\n",
            lines=(2,),
            files=_PROJECT,
        ),
        Invalid("MASTER_PORT=$((RANDOM + 20000)) deepspeed train.py --deepspeed ds.json\n", lines=(1,), files=_PROJECT),
        Invalid(
            "PORT=29611\nexport MASTER_PORT=$PORT\n"
            "nohup deepspeed --include localhost:0,1 train.py --deepspeed ds.json &\n",
            lines=(3,),
            files=_PROJECT,
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        port = "the port it sets" if UNKNOWN_VALUE in issue.detail else f"MASTER_PORT={issue.detail}"
        return f"deepspeed never hands {port} to the ranks: they get its --master_port (29500 by default)"
