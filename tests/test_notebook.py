"""Notebooks: code cells linted as one script, positions as cell and line, magics skipped, fixed in place."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dslint.fix.notebook import write_fixed
from dslint.lint.file import lint_file
from dslint.lint.ipython_lines import python_lines
from dslint.lint.notebook import read_notebook

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "notebooks"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dslint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DSLINT_CACHE_DIR": os.environ["DSLINT_CACHE_DIR"]},
    )


def _copy(tmp_path: Path) -> Path:
    for name in ("proto.ipynb", "ds_config.json"):
        shutil.copy(FIXTURE / name, tmp_path / name)
    return tmp_path / "proto.ipynb"


def test_check_reports_findings_in_two_cells_as_cell_and_line(tmp_path: Path) -> None:
    _copy(tmp_path)
    result = run("check", "--isolated", "proto.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert [line.split(" ")[0:2] for line in result.stdout.splitlines()] == [
        ["proto.ipynb:cell", "2:6:1:"],
        ["proto.ipynb:cell", "4:3:59:"],
    ]
    assert "DSL101" in result.stdout.splitlines()[0] and "DSL201" in result.stdout.splitlines()[1]
    assert "Found 2 findings in 1 of 1 file." in result.stderr
    # `%pip`, `!nvidia-smi`, `files = !ls` and the `%%bash` cell (which prints `model.cuda()`) are not Python:
    # no syntax error, no finding in them, and the lines after them keep their numbers
    as_json = json.loads(run("check", "--isolated", "--output-format", "json", "proto.ipynb", cwd=tmp_path).stdout)
    assert [(d["code"], d["cell"], d["location"]["line"]) for d in as_json] == [("DSL101", 2, 6), ("DSL201", 4, 3)]


def test_fix_in_place_keeps_outputs_metadata_and_formatting(tmp_path: Path) -> None:
    notebook = _copy(tmp_path)
    before = notebook.read_text(encoding="utf-8")
    result = run("fix", "--isolated", "--unsafe-fixes", "proto.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    after = notebook.read_text(encoding="utf-8")
    expected = before.replace(
        '    "model = torch.nn.Linear(8, 8)\\n",\n    "model.cuda()"\n', '    "model = torch.nn.Linear(8, 8)"\n'
    )
    expected = expected.replace('map_location=\\"cuda\\")  # 权重', 'map_location=\\"cpu\\")  # 权重')
    assert expected != before and after == expected  # only the two fixed lines changed, byte for byte
    again = run("check", "--isolated", "proto.ipynb", cwd=tmp_path)
    assert again.returncode == 0 and "All checks passed (1 file checked)." in again.stderr


def test_a_fix_across_lines_is_written_back_and_one_touching_a_magic_or_two_cells_is_refused(
    tmp_path: Path,
) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    source = ["import deepspeed, torch\n", "engine, *_ = deepspeed.initialize(model=m, config='ds.json')\n"]
    source += ["state = torch.load(\n", "    'w.pt', map_location='cuda')\n"]
    nb = {"cells": [{**cell, "source": source}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    fixed = run("fix", "--isolated", "n.ipynb", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert (
        json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"][3] == "    'w.pt', map_location=\"cpu\")\n"
    )
    two = {"cells": [{**cell, "source": ["%time x = 1\n", "a = 1"]}, {**cell, "source": "b = 2\n"}], "metadata": {}}
    notebook = read_notebook(json.dumps(two, indent=1))
    assert notebook.python_text == "pass\na = 1\nb = 2\n"
    assert write_fixed(notebook, "x = 1\na = 1\nb = 2\n").error == (
        "a fix would change a magic or shell line, or a cell IPython dedents; not fixed"
    )
    assert write_fixed(notebook, "pass\na = 3\nb = 3\n").error == "a fix would span two cells; not fixed"
    kept = write_fixed(notebook, "pass\na = 1\nb = 4\n").text
    assert kept is not None and json.loads(kept)["cells"][0]["source"] == ["%time x = 1\n", "a = 1"]
    assert json.loads(kept)["cells"][1]["source"] == "b = 4\n"


def test_a_broken_notebook_is_an_error_never_a_pass(tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text('{"cells": [\n  {"cell_type": "code",,}\n]}\n', encoding="utf-8")
    result = run("check", "broken.ipynb", cwd=tmp_path)
    assert result.returncode == 2
    assert "dslint: error: broken.ipynb: not a notebook: invalid JSON at line 2, column 24" in result.stderr
    assert "passed" not in result.stderr


MALFORMED_CELLS = {
    "source a number": ({"cell_type": "code", "source": 42}, "the `source` of code cell 2 is a number, not text"),
    "a cell that is a string": ("x = 1", "cell 2 is not an object"),
    "a code cell without source": ({"cell_type": "code", "metadata": {}}, "code cell 2 has no `source`"),
    "a list source holding a number": ({"cell_type": "code", "source": ["a = 1\n", 2]}, "a list that is not all"),
    "a lone surrogate": ({"cell_type": "code", "source": "x = '\ud800'\n"}, "lone surrogate (\\ud800)"),
}


@pytest.mark.parametrize("case", MALFORMED_CELLS)
def test_a_malformed_cell_is_one_clear_error_in_check_and_fix(tmp_path: Path, case: str) -> None:
    cell, reason = MALFORMED_CELLS[case]
    good = {"cell_type": "code", "source": "import torch\nstate = torch.load('w.pt')\n", "metadata": {}}
    nb = {"cells": [good, cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb)  # json.dumps writes a lone surrogate as the escape \\ud800, as a notebook holds it
    (tmp_path / "bad.ipynb").write_text(text, encoding="utf-8")
    for command in ("check", "fix"):
        result = run(command, "bad.ipynb", cwd=tmp_path)
        everything = result.stdout + result.stderr
        assert result.returncode == 2, (command, everything)
        lines = [line for line in everything.splitlines() if "bad.ipynb" in line]
        assert len(lines) == 1 and lines[0].startswith("dslint: error: bad.ipynb: ") and reason in lines[0], everything
        assert "internal error" not in everything and "Traceback" not in everything
        assert "All checks passed" not in everything and "No findings remain" not in everything
    assert (tmp_path / "bad.ipynb").read_text(encoding="utf-8") == text


def test_a_notebook_of_another_language_is_skipped_and_said_so(tmp_path: Path) -> None:
    nb = {"cells": [], "metadata": {"kernelspec": {"language": "R", "name": "ir"}}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "r.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    result = run("check", "r.ipynb", cwd=tmp_path)
    assert result.returncode == 0
    assert "dslint: skipped r.ipynb: a r notebook (dslint reads Python notebooks only)" in result.stderr
    assert "No files checked; 1 file skipped (see above)." in result.stderr


def test_directories_yield_notebooks(tmp_path: Path) -> None:
    _copy(tmp_path)
    result = run("check", "--isolated", "--show-files", ".", cwd=tmp_path)
    assert result.stdout.splitlines() == ["ds_config.json", "proto.ipynb"]


def test_magics_become_pass_at_their_indentation_without_moving_lines() -> None:
    lines = [
        "for i in range(2):\n",
        "    !echo $i\n",
        "    %time f()\n",
        "x = 1?\n",
        "y = !ls \\\n",
        "  -la\n",
        "z = 2",
    ]
    assert python_lines(lines) == (
        "for i in range(2):\n",
        "    pass\n",
        "    pass\n",
        "pass\n",
        "pass\n",
        "\n",
        "z = 2",
    )
    assert python_lines(["%%bash\n", "echo hi\n"]) == ("\n", "\n")
    notebook = read_notebook(json.dumps({"cells": [{"cell_type": "code", "source": "a = 1"}]}))
    assert notebook.python_text == "a = 1\n" and notebook.cells[0].number == 1


def _notebook(*sources: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": source} for source in sources]})


@pytest.mark.parametrize(
    ("sources", "python"),
    [
        # IPython runs a one-line cell whose first word is a line magic as that magic (automagic)
        (("pip install --upgrade peft\n",), "pass\n"),
        (("\n  cd /data\n",), "\npass\n"),  # IPython takes the first line's indentation off the cell first
        (("pip install x",), "pass\n"),
        # not one line (a trailing blank line or a comment counts): IPython applies no automagic; a syntax error
        (("pip install x\n\n",), "pip install x\n\n"),
        (("# deps\npip install x\n",), "# deps\npip install x\n"),
        # an assignment, a dotted name, a word that is no magic: Python
        (("time = 3\n",), "time = 3\n"),
        (("time.sleep(1)\n",), "time.sleep(1)\n"),
        (("apt install x\n",), "apt install x\n"),
        # a name the notebook binds shadows the magic: Python
        (("def run(x):\n    return x\n", "run 3\n"), "def run(x):\n    return x\nrun 3\n"),
        (("from torch import load\n", "load(f)\n"), "from torch import load\nload(f)\n"),
    ],
)
def test_a_one_line_automagic_cell_is_a_magic_and_nothing_else_is(sources: tuple[str, ...], python: str) -> None:
    assert read_notebook(_notebook(*sources)).python_text == python


def test_an_automagic_cell_is_no_syntax_error(tmp_path: Path) -> None:
    """A notebook with a bare `pip install` cell beside DeepSpeed code: no DSL001; a two-line one still is."""
    code = "import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config='ds.json')\n"
    (tmp_path / "magic.ipynb").write_text(_notebook("pip install deepspeed\n", code), encoding="utf-8")
    (tmp_path / "broken.ipynb").write_text(_notebook("pip install deepspeed\npip install peft\n", code), "utf-8")
    result = run("check", "--isolated", "--select", "DSL001", "magic.ipynb", "broken.ipynb", cwd=tmp_path)
    assert "magic.ipynb" not in result.stdout, result.stdout
    assert "broken.ipynb:cell 1:1:" in result.stdout and "DSL001" in result.stdout, result.stdout


DATABRICKS_CELLS = (
    "# MAGIC %md\n# MAGIC ## Fine-tune\n",
    "%pip install deepspeed==0.19.8\n",
    "import deepspeed\nimport torch\n\nmodel = torch.nn.Linear(4, 4)\nmodel.cuda()\n"
    "engine, *_ = deepspeed.initialize(model=model, config='ds.json')\n",
    "# MAGIC %sh\n# MAGIC nvidia-smi\n",
    "!deepspeed --num_gpus 2 \\\n    train.py \\\n    --deepspeed ds.json\n",
)


def _databricks(header: bool, cells: tuple[str, ...] = DATABRICKS_CELLS) -> str:
    body = "\n# COMMAND ----------\n\n".join(cells)
    return f"# Databricks notebook source\n{body}" if header else body


def test_a_databricks_notebook_source_is_read_as_a_notebook_not_a_syntax_error(tmp_path: Path) -> None:
    """`%pip`, a `!deepspeed` line with its continuations: a Databricks notebook source runs them; its Python is
    still checked (the `.cuda()` at line 15) with lines unmoved. The same text without the header is a script
    with a syntax error, and so is a notebook source whose Python itself is broken."""
    (tmp_path / "notebook.py").write_text(_databricks(True), encoding="utf-8")
    (tmp_path / "script.py").write_text(_databricks(False), encoding="utf-8")
    broken = (*DATABRICKS_CELLS[:2], DATABRICKS_CELLS[2].replace("model.cuda()", "model.cuda("))
    (tmp_path / "broken.py").write_text(_databricks(True, broken), encoding="utf-8")
    result = run("check", "--isolated", "--select", "DSL001,DSL101", "notebook.py", "script.py", cwd=tmp_path)
    found = sorted(line.split(" ")[:2] for line in result.stdout.splitlines() if line.startswith(("n", "s")))
    assert found == [["notebook.py:15:1:", "DSL101"], ["script.py:6:1:", "DSL001"]], result.stdout
    broken_result = run("check", "--isolated", "--select", "DSL001", "broken.py", cwd=tmp_path)
    assert "broken.py:" in broken_result.stdout and "DSL001" in broken_result.stdout, broken_result.stdout


def test_a_cell_its_editor_marks_as_another_language_is_not_python(tmp_path: Path) -> None:
    """VS Code keeps a cell's language in `metadata.vscode.languageId`: a "shellscript" cell holds a shell command
    (`CUDA_VISIBLE_DEVICES=0 \\` ... `--model x`), which is no Python to parse; a Python cell beside it still is."""
    shell = {
        "cell_type": "code",
        "metadata": {"vscode": {"languageId": "shellscript"}},
        "source": ["CUDA_VISIBLE_DEVICES=0 \\\n", "swift sft \\\n", "    --model Qwen/Qwen2.5-VL-7B-Instruct\n"],
        "outputs": [],
        "execution_count": None,
    }
    python = {**shell, "metadata": {"vscode": {"languageId": "python"}}, "source": ["x = (\n"]}
    document = {"cells": [shell, python], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(document), encoding="utf-8")
    notebook = read_notebook(path.read_text(encoding="utf-8"))
    assert [line.strip() for line in notebook.cells[0].python] == ["", "", ""]
    assert notebook.cells[1].python == ("x = (\n",)


def test_a_cell_indented_as_a_whole_is_read_as_ipython_reads_it(tmp_path: Path) -> None:
    """IPython takes the first non-blank line's indentation off every line of a cell that starts with it before it
    compiles the cell (`leading_indent`): such a cell is no syntax error, and findings in it keep its own columns."""
    notebook = tmp_path / "indented.ipynb"
    cell = (
        "\n  import deepspeed\n  import torch\n  model = torch.nn.Linear(2, 2)\n  model.cuda()\n"
        "  engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config='ds.json')\n"
    )
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": cell}]}))
    result = lint_file(str(notebook), notebook.read_bytes())
    codes = [(d.code, d.cell, d.start.line, d.start.column, d.fix) for d in result.diagnostics]
    assert codes == [("DSL101", 1, 5, 3, None)]  # the move at its column in the cell; no fix in such a cell
