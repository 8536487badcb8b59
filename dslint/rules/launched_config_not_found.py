"""DSL423: a launch names a DeepSpeed config file that is not in the project."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PROJECT = (("train.py", "import argparse\nimport deepspeed\n"), ("configs/ds_zero2.json", "{}\n"))


def _notebook(command: str) -> str:
    """A notebook of one code cell whose first line is the shell command `command`."""
    return (
        '{\n "cells": [\n  {\n   "cell_type": "code",\n   "execution_count": null,\n   "metadata": {},\n'
        f'   "outputs": [],\n   "source": [\n    "{command}"\n   ]\n  }}\n ],\n "metadata": {{}},\n'
        ' "nbformat": 4,\n "nbformat_minor": 5\n}\n'
    )


# a launcher passing a YAML of the Trainer's arguments to a script that splats them into TrainingArguments
_PROJECT_YAML = (
    ("run.sh", "deepspeed --num_gpus 2 train.py --train_config configs/train.yaml\n"),
    (
        "train.py",
        "import sys, yaml\nfrom transformers import TrainingArguments\n"
        "cfg = yaml.safe_load(open(sys.argv[-1]))\nargs = TrainingArguments(**cfg['train'])\n",
    ),
)


class LaunchedConfigNotFound(LaunchRule):
    code = "DSL423"
    slug = "launched-config-not-found"
    kind = "missing_config"
    message = "the DeepSpeed config this launch passes is not in the project"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags the DeepSpeed config option of a launch command (`--deepspeed ds.json`, `--deepspeed_config`, or
            nested, `--training_arguments.deepspeed`, for a parser of dotted names) when the script is in the
            project but the config path, read from where the launcher runs (its folder, the repository root, after
            its `cd`), names no file, and nothing in the project writes one (no Python file other than the launcher
            names it within three lines of a write, a dump or a copy; an option's default naming it writes nothing;
            nowhere else in the launcher, no redirection or `tee` writing it). When a file of that name exists
            elsewhere, only a path with a folder counts (`configs/ds.json` where the project has only
            `config/ds.json`: the folder is wrong; the message names the file; in a launcher script, a file in its
            own folder, or anywhere in the project for the Trainer's `--deepspeed`, which surely opens it, not one
            of another example a custom option may never open), unless that file sits beside the
            launcher or the script and the script finds files by its own location (`__file__`: it may read it from
            there); a bare name is left alone (the user may be meant to copy the file beside the launcher). Absolute
            and home paths (the user's own machine; but a path of another machine's checkout that ends with the
            launcher's own folder and a DeepSpeed config's name, `/home/u/repo/configs/ds_z3.json` in
            configs/run.sh, is read as that folder's file), paths built at run time, a script that tests the file's
            existence first (`if os.path.exists( args.ds_config):`, it goes on without it), and a wrong folder after
            a `cd` out of the project are left alone, and so is a launch in a Markdown or reST document that writes
            the config out in a code block for the reader to save (the block is checked as the config instead). The
            `deepspeed:` key of a YAML of the Trainer's arguments that a launch passes (`--train_config train.yaml`,
            to a script building `TrainingArguments(**mapping)`) is flagged in the YAML when no file of that name is
            anywhere in the project. A notebook's `!` launch is flagged in the cell that holds it. The
            `--config_file` of `accelerate launch` is judged the same way, when the launch is DeepSpeed's (the
            file's name says `deepspeed`, `zero` or `ds`, or the script mentions DeepSpeed) and the path leads into
            a folder (a bare name may be the file the reader makes with `accelerate config`; placeholders such as
            `<config.yaml>` are left alone too): accelerate stops with FileNotFoundError before any process starts.
            The `deepspeed_config_file:` of such an accelerate config (`distributed_type: DEEPSPEED`) is flagged in
            the YAML when no file of that name is anywhere in the project and nothing writes one: every process's
            DeepSpeed plugin hands it to `HfDeepSpeedConfig`, which raises ValueError for a path that is no file.
            A path that names a project file but for letter case (`ds.JSON`, `SFT/` for `sft/`) names no file on
            Linux: it is flagged, naming the file. A path a script writes itself for the Trainer or accelerate
            (`TrainingArguments(deepspeed="ds.json")`, `DeepSpeedPlugin(hf_ds_config="ds.json")`) is judged the same
            way, read from the script's folder up to the project root (the script's own writes count), and flagged
            at the keyword. A launcher that tests the file's existence itself (`[ ! -f "$DS_CONFIG" ] && exit 1`,
            for every value it gives that variable) expects it may be absent, and says so: left alone. So is an
            option of the script's own (not DeepSpeed's `--deepspeed_config` nor the Trainer's `--deepspeed`) that
            no source of the project reads (`args.<option>`, `cfg["<option>"]`): nothing opens the file.
        """,
        why="""
            The script opens the config at start-up (DeepSpeed's `DeepSpeedConfig`, or the HF Trainer's
            `TrainingArguments(deepspeed=...)`) and stops when the file is missing: the launcher cannot run as
            shipped. Often the config was renamed or never committed, and another config of the project was
            meant.
        """,
        example="""
            deepspeed --num_gpus 2 train.py --deepspeed configs/ds_zero1.json
        """,
        use_instead="""
            deepspeed --num_gpus 2 train.py --deepspeed configs/ds_zero2.json
        """,
    )
    valid = (
        Valid(  # an option the script declares but never reads: no one opens the file
            "deepspeed train.py --deepspeed_config_file configs/ds_zero1.json\n",
            files=(
                (
                    "train.py",
                    "import argparse\nimport deepspeed\nparser = argparse.ArgumentParser()\n"
                    "parser.add_argument('--deepspeed_config_file')\nargs = parser.parse_args()\n",
                ),
            ),
        ),
        # a README's command, read from the folder of the example that holds the file
        Valid(
            "# Train\n\n```bash\ndeepspeed train.py --deepspeed configs/ds_zero2.json\n```\n",
            path="README.md",
            files=(
                ("examples/sft/train.py", "import deepspeed\n"),
                ("examples/sft/configs/ds_zero2.json", '{"train_batch_size": 8}\n'),
            ),
        ),
        # the same path of another machine, whose file the checkout holds
        Valid(
            "cd /home/someone/repo\n"
            "deepspeed --num_gpus 2 train.py --deepspeed /home/someone/repo/configs/ds_zero2.json\n",
            path="configs/run.sh",
            files=_PROJECT,
        ),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed configs/ds_zero2.json\n", files=_PROJECT),
        Valid(
            "python make_config.py\ndeepspeed --num_gpus 2 train.py --deepspeed ds_generated.json\n",
            files=(*_PROJECT, ("make_config.py", "open('ds_generated.json', 'w').write('{}')\n")),
        ),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed /data/ds_zero1.json\n", files=_PROJECT),
        # a bare name whose file lies in another folder: the user may be meant to copy it beside the launcher
        Valid(
            "deepspeed --num_gpus 2 train.py --deepspeed ds_zero2.json\n",
            files=(("train.py", "import argparse\nimport deepspeed\n"), ("configs/ds_zero2.json", "{}\n")),
        ),
        # the script opens the file only when it exists, and builds its config otherwise
        Valid(
            "deepspeed --num_gpus 2 train.py --ds_config deepspeed_config.json\n",
            files=(
                (
                    "train.py",
                    "import argparse, json, os\nimport deepspeed\n"
                    "if args.ds_config and os.path.exists(args.ds_config):\n"
                    "    config = json.load(open(args.ds_config))\n",
                ),
            ),
        ),
        # a notebook's `!` launch naming a file the project has
        Valid(
            _notebook("!deepspeed --num_gpus 2 train.py --deepspeed_config configs/ds_zero2.json"),
            path="train.ipynb",
            files=_PROJECT,
        ),
        # the file of that name lies beside the script, which finds files by its own location (`__file__`)
        Valid(
            "deepspeed --num_gpus 2 src/train.py --deepspeed cfg/ds.json\n",
            files=(
                ("src/train.py", "import argparse, os\nimport deepspeed\nHERE = os.path.dirname(__file__)\n"),
                ("src/ds.json", "{}\n"),
            ),
        ),
        # after a `cd` to another machine's checkout, the folder written cannot be judged against this project
        Valid(
            "cd /home/user/upstream-checkout\ndeepspeed src/train.py --deepspeed scripts/ds_zero2.json\n",
            files=(("src/train.py", "import argparse\nimport deepspeed\n"), ("ds_zero2.json", "{}\n")),
        ),
        # a nested option of a parser of dotted names, naming a file the project has
        Valid("deepspeed train.py --training_arguments.deepspeed configs/ds_zero2.json\n", files=_PROJECT),
        # the Trainer's arguments in a YAML the launch passes, whose `deepspeed:` file the project has
        Valid(
            "train:\n  deepspeed: configs/ds_zero2.json\n",
            path="configs/train.yaml",
            files=(*_PROJECT_YAML, ("configs/ds_zero2.json", "{}\n")),
        ),
        # ... or has in another folder (the key may be read from elsewhere): no evidence for this shape
        Valid(
            "train:\n  deepspeed: ds/ds_zero2.json\n",
            path="configs/train.yaml",
            files=(*_PROJECT_YAML, ("configs/ds_zero2.json", "{}\n")),
        ),
        # an accelerate config the project has
        Valid(
            "accelerate launch --config_file configs/zero2.yaml train.py\n",
            files=(*_PROJECT, ("configs/zero2.yaml", "distributed_type: DEEPSPEED\n")),
        ),
        # a sub-project's README, whose commands its reader runs from its own folder: `../` reaches the shared
        # configs there, whatever folder an earlier section's `cd` entered
        Valid(
            "# Evaluate\n\n```\ncd evaluation\n```\n\n# Fine-tune\n\n```\n"
            "accelerate launch --config_file ../accelerate_configs/deepspeed_zero2.yaml tune.py\n```\n",
            path="sub/README.md",
            files=(
                ("sub/train.py", "import deepspeed\n"),
                ("accelerate_configs/deepspeed_zero2.yaml", "distributed_type: DEEPSPEED\n"),
            ),
        ),
        # the DeepSpeed config an accelerate config names is in the project; under MULTI_GPU it is never read
        Valid(
            "deepspeed_config:\n  deepspeed_config_file: configs/ds_zero2.json\ndistributed_type: DEEPSPEED\n",
            path="accelerate_ds.yaml",
            files=(*_PROJECT, ("run.sh", "accelerate launch --config_file accelerate_ds.yaml train.py\n")),
        ),
        Valid(
            "deepspeed_config:\n  deepspeed_config_file: configs/ds_zero3.json\ndistributed_type: MULTI_GPU\n",
            path="accelerate_ds.yaml",
            files=(*_PROJECT, ("run.sh", "accelerate launch --config_file accelerate_ds.yaml train.py\n")),
        ),
        # a bare name: the file the reader makes with `accelerate config --config_file ds_zero3.yaml`
        Valid("accelerate launch --config_file ds_zero3.yaml train.py\n", files=_PROJECT),
        # a missing accelerate config of a launch that says nothing of DeepSpeed: not this linter's to judge
        Valid(
            "accelerate launch --config_file configs/multi_gpu.yaml train.py\n",
            files=(("train.py", "from accelerate import Accelerator\n"),),
        ),
        # the launcher tests the config it chose itself, and stops with its own message when it is absent
        Valid(
            'if [ "$STAGE" -eq 3 ]; then\n    DS_CONFIG=configs/ds_zero3.json\nelse\n'
            "    DS_CONFIG=configs/ds_zero1.json\nfi\n"
            'if [ ! -f "$DS_CONFIG" ]; then\n    echo "no config: $DS_CONFIG"\n    exit 1\nfi\n'
            "deepspeed --num_gpus 2 train.py --deepspeed $DS_CONFIG\n",
            files=_PROJECT,
        ),
        # the launcher renders the config from a template just before the launch, into a file named by variables
        Valid(
            'MODEL=gpt125m\nCONFIG="ds_${MODEL}.json"\nsed "s/MBS/4/" template.json \\\n'
            '    | sed "s/GAS/2/" \\\n    > ${CONFIG}\ndeepspeed train.py --deepspeed_config ${CONFIG}\n',
            files=_PROJECT,
        ),
    )
    invalid = (
        Invalid("deepspeed --num_gpus 2 train.py --deepspeed configs/ds_zero1.json\n", lines=(1,), files=_PROJECT),
        # a README's command naming a folder no file of that name lies in, from any folder
        Invalid(
            "# Train\n\n```bash\ndeepspeed train.py --deepspeed configs/ds_zero2.json\n```\n",
            lines=(4,),
            path="README.md",
            files=(("train.py", "import deepspeed\n"), ("ds_zero2.json", '{"train_batch_size": 8}\n')),
        ),
        # another machine's checkout: the path within it is this launcher's folder, and no such config is there
        Invalid(
            "cd /home/someone/repo\n"
            "deepspeed --num_gpus 2 train.py --deepspeed /home/someone/repo/configs/ds_z3.json\n",
            lines=(2,),
            path="configs/run.sh",
            files=_PROJECT,
        ),
        # a source that only names the file (an option's default) does not write it
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n",
            lines=(1,),
            files=(
                ("train.py", "import deepspeed\nfrom config import parse\nlog = open('train.log', 'w')\n"),
                ("config.py", "def parse(p):\n    p.add_argument('--deepspeed_config', default='ds_config.json')\n"),
            ),
        ),
        # a wrong folder: the project has the file under config/, the launch names configs/
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed ./configs/ds_zero1.json\n",
            lines=(1,),
            files=(("train.py", "import argparse\nimport deepspeed\n"), ("config/ds_zero1.json", "{}\n")),
        ),
        # the file of that name lies beside the launcher and the script, but the script opens the path it is given
        # from where it runs: the folder written leads nowhere
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed tests/deepspeed/ds_zero2.json\n",
            lines=(1,),
            files=(("train.py", "import argparse\nimport deepspeed\n"), ("ds_zero2.json", "{}\n")),
        ),
        # a notebook's `!` launch: reported in its cell (line 1 of cell 1)
        Invalid(
            _notebook("!deepspeed --num_gpus 2 train.py --deepspeed_config ds_zero1.json"),
            lines=(1,),
            path="train.ipynb",
            files=_PROJECT,
        ),
        # a nested option (`--training_arguments.deepspeed`, jsonargparse or quinine) naming no file
        Invalid(
            "deepspeed train.py --training_arguments.deepspeed configs/ds_zero1.json\n", lines=(1,), files=_PROJECT
        ),
        # the Trainer's arguments kept in a YAML the launch passes: its `deepspeed:` names no file of the project
        Invalid(
            "train:\n  deepspeed: configs/ds_zero1.json\n",
            lines=(2,),
            path="configs/train.yaml",
            files=(*_PROJECT_YAML, ("configs/ds_zero2.json", "{}\n")),
        ),
        # an accelerate config in a folder the project does not have (it has accelerate_configs/, beside it)
        Invalid(
            "accelerate launch --config_file=accelerate_config/deepspeed_zero3.json train.py\n",
            lines=(1,),
            files=(*_PROJECT, ("accelerate_configs/deepspeed_zero3.yaml", "distributed_type: DEEPSPEED\n")),
        ),
        # the accelerate config a launch passes names a DeepSpeed config the project lacks
        Invalid(
            "deepspeed_config:\n  deepspeed_config_file: configs/ds_zero3.json\ndistributed_type: DEEPSPEED\n",
            lines=(2,),
            path="accelerate_ds.yaml",
            files=(*_PROJECT, ("run.sh", "accelerate launch --config_file accelerate_ds.yaml train.py\n")),
        ),
        # the config's path but for letter case: no such file on Linux
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed configs/DS_zero2.json\n",
            lines=(1,),
            files=_PROJECT,
        ),
        # what the launcher writes is another file (its log), not the config it passes
        Invalid(
            'MODEL=gpt125m\nCONFIG="ds_${MODEL}.json"\n'
            "deepspeed train.py --deepspeed_config ${CONFIG} > ${MODEL}.log 2>&1\n",
            lines=(3,),
            files=_PROJECT,
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        if issue.options == ("deepspeed_config_file",):  # the DeepSpeed config an accelerate config names
            return (
                f"{issue.detail}: no such file in the project, and nothing in it writes one; accelerate's DeepSpeed "
                "plugin stops every process"
            )
        if issue.options == ("--config_file",):  # an accelerate config
            meant = f" (the project has {', '.join(issue.elsewhere[:2])})" if issue.elsewhere else ""
            return f"{issue.detail}: no such accelerate config where this runs{meant}; accelerate launch stops"
        if issue.elsewhere:
            others = ", ".join(issue.elsewhere[:2]) + (" ..." if len(issue.elsewhere) > 2 else "")
            return f"{issue.detail}: no such file where this runs (the project has {others}); the script stops there"
        return (
            f"{issue.detail}: no such file in the project, and nothing in it writes one; the script stops where "
            "it opens the DeepSpeed config"
        )
