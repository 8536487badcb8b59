"""Launch commands in a job spec's YAML (`dslint.project.yaml_commands`): what is read as shell, at its columns."""

from dslint.project.yaml_commands import yaml_shell_text


def test_a_command_list_item_keeps_its_line_and_columns() -> None:
    text = "job:\n  command:\n    - deepspeed --num_gpus=4 train.py --bs={bs} --pt\n"
    shell = yaml_shell_text(text)
    assert shell is not None
    lines = shell.splitlines()
    assert lines[:2] == ["", ""]
    assert lines[2].index("--pt") == text.splitlines()[2].index("--pt")
    assert "$bs_" in lines[2] and "{bs}" not in lines[2]


def test_a_quoted_value_and_a_block_scalar() -> None:
    text = (
        'cmd: "torchrun --nproc_per_node 8 run.py --deepspeed ds.json"\n'
        "steps:\n"
        "  run: |\n"
        "    cd src\n"
        "    accelerate launch --config_file acc.yaml finetune.py\n"
        "  name: after\n"
    )
    shell = yaml_shell_text(text)
    assert shell is not None
    lines = shell.splitlines()
    assert lines[0].strip() == "torchrun --nproc_per_node 8 run.py --deepspeed ds.json"
    assert lines[0].index("torchrun") == text.index("torchrun")
    assert lines[4].strip() == "accelerate launch --config_file acc.yaml finetune.py"
    assert lines[3] == "" and lines[5] == ""  # a `cd` alone is no launch; the block ends at `name:`


def test_yaml_that_only_names_deepspeed_is_no_launcher() -> None:
    assert yaml_shell_text("dependencies:\n  - deepspeed\n  - pip:\n    - deepspeed==0.14.0\n") is None
    assert yaml_shell_text("deepspeed: configs/ds.json\nrun_name: deepspeed train.py sweep\n") is None
    assert yaml_shell_text("command: python train.py --epochs 3\n") is None  # one process: not read
