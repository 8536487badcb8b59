"""Who reads an "auto" config (DSL405), over fixtures/projects/auto_readers, both ways: reported only where dslint
sees the link to `deepspeed.initialize` (a launcher option the script carries into initialize); silent for a file
nothing names (though vendored code calls initialize), a `--ds_config` that the script gives to
`TrainingArguments(deepspeed=...)` or an `HfArgumentParser` field copied there, `DeepSpeedPlugin(hf_ds_config=...)`,
a name joined to a folder in code, and an option whose value goes to another module."""

from __future__ import annotations

import os

from fixture_support import FIXTURES

from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.project.config_readers import option_readers
from dslint.selection import RuleSelection

PROJECT = FIXTURES / "projects" / "auto_readers"


def _index():
    files = discover([str(PROJECT)]).files
    return files, index_project(files, [str(PROJECT)])


def test_each_config_gets_the_reader_its_link_says() -> None:
    _, index = _index()
    readers = {
        name: (reading.reader if (reading := index.config_reading(PROJECT / "configs" / name)) else None)
        for name in sorted(os.listdir(PROJECT / "configs"))
    }
    assert readers == {
        "elsewhere_auto.json": "unlinked",  # the value goes to another module
        "hfparser_auto.json": "trainer",  # an HfArgumentParser field copied into training_args.deepspeed
        "joined_auto.json": None,  # looked up in a table, joined to a folder
        "opt_auto.json": "initialize",  # config=args.ds_config (through a name)
        "plugin_auto.json": "trainer",  # DeepSpeedPlugin(hf_ds_config="...")
        "raw_auto.json": "initialize",  # --deepspeed_config, initialize(args=args)
        "trainer_auto.json": "trainer",  # TrainingArguments(deepspeed=args.ds_config)
        "unlinked_auto.json": None,  # nothing names it; vendored code calls initialize
    }


def test_auto_is_reported_only_where_initialize_reads_it() -> None:
    files, index = _index()
    only = RuleSelection.from_options(["DSL405"])
    found = sorted(  # a config is linted on its own and with each script reading it: the same finding
        {
            (os.path.relpath(d.path, PROJECT), d.start.line, d.code, d.severity.value, d.message)
            for result in lint_files([(f, only) for f in files], jobs=1, project=index)
            for d in result.diagnostics
        }
    )
    message = 'write a value for `train_micro_batch_size_per_gpu`, not "auto": DeepSpeed fails at start-up (TypeError)'
    assert found == [
        (os.path.join("configs", "opt_auto.json"), 2, "DSL405", "error", message),
        (os.path.join("configs", "raw_auto.json"), 2, "DSL405", "error", message),
    ]


def test_an_option_value_is_followed_to_its_reader() -> None:
    trainer = b"import x\nta = TrainingArguments(output_dir='o', deepspeed=os.path.abspath(args.ds_config))\n"
    assert option_readers(trainer, "ds_config") == {"trainer"}
    plugin = b"p = args.ds_config if args.ds_config else None\nplugin = DeepSpeedPlugin(hf_ds_config=p)\n"
    assert option_readers(plugin, "ds_config") == {"trainer"}
    both = (
        b"def main(args):\n    if args.hf:\n        TrainingArguments(output_dir='o', deepspeed=args.ds_config)\n"
        b"    else:\n        deepspeed.initialize(model=m, config=args.ds_config)\n"
    )
    assert option_readers(both, "ds_config") == {"trainer", "initialize"}
    joined = b"path = os.path.join(args.ds_dir, args.ds_config)\ndeepspeed.initialize(model=m, config=path)\n"
    assert option_readers(joined, "ds_config") == set()  # a name joined to a folder: not the launched file
    elsewhere = b"from helpers import run\nrun(args.ds_config)\n"
    assert option_readers(elsewhere, "ds_config") == set()
    own = b"parser = deepspeed.add_config_arguments(parser)\nengine, *_ = deepspeed.initialize(args=args, model=m)\n"
    assert option_readers(own, "deepspeed_config") == {"initialize"}
    assert option_readers(own, "ds_config") == set()
