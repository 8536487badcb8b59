"""What a `torch.save` archive the project ships holds, read without running it: whether any tensor in it was saved
from a CUDA device.

`torch.save` (zip format, torch >= 1.6) writes `<name>/data.pkl`, a pickle whose persistent ids name each storage
with its location (`('storage', FloatStorage, '0', 'cuda:0', 1024)`); `torch.load` without `map_location` puts a
storage back on that location. An archive whose pickle names no `cuda` location (CPU tensors, numpy arrays, plain
Python values) puts nothing on a GPU. The pickle is scanned opcode by opcode (`pickletools.genops`), never loaded.
Legacy (non-zip) files, unreadable ones and archives over the size cap give no answer.
"""

from __future__ import annotations

import os
import pickletools
import zipfile

from dslint.project.inputs import record

MAX_ARCHIVE = 64 * 1024 * 1024  # bytes of the archive read at most (its pickle, not its storages)
MAX_PICKLE = 8 * 1024 * 1024


def holds_no_cuda_tensors(path: str) -> bool:
    """`path` is a `torch.save` zip archive whose pickle names no CUDA location (see the module's docstring)."""
    record(path)
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_ARCHIVE or not zipfile.is_zipfile(path):
            return False
        with zipfile.ZipFile(path) as archive:
            members = [info for info in archive.infolist() if info.filename.endswith("/data.pkl")]
            if len(members) != 1 or members[0].file_size > MAX_PICKLE:
                return False
            data = archive.read(members[0])
        for _, argument, _ in pickletools.genops(data):
            if isinstance(argument, str) and argument.startswith("cuda"):
                return False
    except (OSError, ValueError, zipfile.BadZipFile, RuntimeError, EOFError):
        return False
    return True
