"""Who reads a config file nothing names, from the scripts beside it: a folder whose scripts hand their command
line to `deepspeed.initialize(args=...)` (DeepSpeed then opens `args.deepspeed_config` itself, `--deepspeed_config
ds.json`) and hand no config to anything else.

A DeepSpeed config that no launcher, document or code of the project names is usually run by hand with the
script beside it (`deepspeed train.py --deepspeed_config ds_config.json`, the command left out of the repository).
When every script of its folder that may read a config is such an initialize, none of them touches the
Hugging Face integrations, accelerate or Lightning (which fill `"auto"` values), and no launcher hands a config
of that folder to another reader, the file is read as that initialize's: no code can replace its values first,
since DeepSpeed opens the file itself. The reading is presumed (`ConfigReading.named` False: only files
recognised as DeepSpeed configs) and names the initialize it presumes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from dslint.diagnostics import Related
from dslint.model.values import InitSite
from dslint.project.config_reading import hf_reader_text, lightning_configured
from dslint.project.inputs import shown_path

# Other readers of a config a script of the folder may run with (`Accelerator` under `accelerate launch
# --deepspeed_config_file`): a folder holding one presumes nothing.
OTHER_READER_TOKENS = (b"Accelerator", b"Trainer", b"DeepSpeedStrategy", b"init_inference")
PRESUMED = "deepspeed.initialize(args=) beside a config nothing names"  # the message of the reader's Related


def command_line_readers(
    inits: Iterable[InitSite], sources: Mapping[str, bytes], config_readers: Mapping[str, set[str]]
) -> dict[str, Related]:
    """By folder (absolute): the first `initialize(args=...)` given no config of its own, in a folder where no
    initialize is given one, no script may hand a config to another reader, and no config the project names
    (`config_readers`, by absolute path) is read by another (a launcher handing a sibling to the Trainer: the
    folder's configs are the Trainer's)."""
    readers: dict[str, Related] = {}
    others = {os.path.dirname(path) for path, read in config_readers.items() if read - {"initialize"}}
    for site in sorted(inits, key=lambda s: (s.path, s.line, s.column)):
        folder = os.path.dirname(site.path)
        if site.config is not None or not site.has_args:
            others.add(folder)  # this initialize is given a config (or none at all): the folder's files may be its
            continue
        readers.setdefault(folder, Related(shown_path(site.path), site.line, site.column, PRESUMED))
    for path, data in sources.items():
        folder = os.path.dirname(path)
        if folder in readers and (
            hf_reader_text(data) or lightning_configured(data) or any(token in data for token in OTHER_READER_TOKENS)
        ):
            others.add(folder)
    return {folder: related for folder, related in readers.items() if folder not in others}
