"""DSL447 against DeepSpeed itself: the keywords `model/library.py` says `initialize`, `save_checkpoint` and
`load_checkpoint` accept are exactly those of the installed DeepSpeed's signatures, none of which takes `**kwargs`
(read in a subprocess, so that the test run does not import torch)."""

from __future__ import annotations

import json
import subprocess
import sys

from dslint.model.library import ACCEPTED_KEYWORDS

_READ = """
import inspect, json
import deepspeed
from deepspeed.runtime.engine import DeepSpeedEngine
found = {}
for name, function in (("initialize", deepspeed.initialize), ("save_checkpoint", DeepSpeedEngine.save_checkpoint),
                       ("load_checkpoint", DeepSpeedEngine.load_checkpoint)):
    parameters = inspect.signature(function).parameters.values()
    found[name] = [p.name for p in parameters if p.name != "self"]
    found[name + "_splat"] = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
print(json.dumps(found))
"""


def test_accepted_keywords_are_deepspeeds_signatures() -> None:
    result = subprocess.run([sys.executable, "-c", _READ], capture_output=True, text=True, timeout=600, check=True)
    found = json.loads(result.stdout.strip().splitlines()[-1])
    for name, accepted in ACCEPTED_KEYWORDS.items():
        assert set(found[name]) == set(accepted), name
        assert not found[name + "_splat"], name
