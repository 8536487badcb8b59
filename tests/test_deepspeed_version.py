"""Which DeepSpeed a project runs (setting, pins, default), and rules that judge against that version."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from dslint.cli import main
from dslint.config.schema import load_release_schema, schema_releases
from dslint.config.versions import Version, config_schema, known_releases, newest_known, schema_release
from dslint.framework.registry import rule_by_code
from dslint.lint.config import lint_config_source
from dslint.lint.script import lint_source
from dslint.project.deepspeed_version import find_pin, newest_of_specifier, resolve, version_of_specifier
from dslint.selection import RuleSelection
from dslint.settings import SettingsError, SettingsResolver

# Valid on DeepSpeed 0.14 (which reads `amp`), refused by 0.19.8 (which removed Apex AMP and lists the key).
AMP_CONFIG = '{\n  "train_batch_size": 8,\n  "amp": {"enabled": true}\n}\n'


def _check(tmp_path: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["check", str(tmp_path), *extra])
    return result.exit_code, result.output


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


def test_the_acceptance_config_is_real() -> None:
    """`amp` is a live key of 0.14.5's schema and a removed (refused) one of the newest's."""
    old, new = load_release_schema("0.14.5"), load_release_schema(str(newest_known()))
    assert "amp" in old.live_top_level_keys and "amp" not in old.removed_top_level
    assert "amp" in new.removed_top_level


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pyproject.toml": '[tool.dslint]\ndeepspeed-version = "0.14"\n'}, None),
        ({"requirements.txt": "torch\ndeepspeed==0.14.0  # pinned\n"}, None),
        ({"requirements-train.txt": "deepspeed>=0.14,<0.16\n"}, None),
        ({"setup.py": 'setup(install_requires=["torch", "deepspeed~=0.14.2"])\n'}, None),
        ({"setup.cfg": "[options]\ninstall_requires =\n    torch\n    deepspeed==0.14.4\n"}, None),
        ({"environment.yml": "dependencies:\n  - python=3.10\n  - deepspeed=0.14.0\n"}, None),
        ({"Dockerfile": "FROM python:3.10\nRUN pip install torch \\\n    deepspeed==0.14.2\n"}, None),
        ({"pyproject.toml": '[project]\nname = "x"\ndependencies = [\n  "torch",\n  "deepspeed==0.14.0",\n]\n'}, None),
    ],
    ids=["setting", "requirements", "range", "setup.py", "setup.cfg", "environment.yml", "Dockerfile", "pyproject"],
)
def test_a_config_valid_in_0_14_is_clean_there_and_flagged_on_0_19(
    tmp_path: Path, files: dict[str, str], expected: None
) -> None:
    _project(tmp_path, {**files, "ds_config.json": AMP_CONFIG})
    code, output = _check(tmp_path)
    assert code == 0, output
    (tmp_path / "ds_config.json").write_text(AMP_CONFIG)
    for name in files:
        (tmp_path / name).unlink()
    code, output = _check(tmp_path)
    assert code == 1 and "DSL402" in output and "ds_config.json:3" in output, output


def test_settings_show_the_version_and_where_it_came_from(tmp_path: Path) -> None:
    _project(tmp_path, {"requirements.txt": "numpy\n\ndeepspeed>=0.12,<0.15\n"})
    result = CliRunner().invoke(main, ["settings", str(tmp_path)])
    assert "deepspeed-version: 0.12.0 from requirements.txt:3 (deepspeed>=0.12,<0.15)" in result.output
    _project(tmp_path, {"pyproject.toml": '[tool.dslint]\nselect = ["DSL"]\ndeepspeed-version = "0.17.6"\n'})
    result = CliRunner().invoke(main, ["settings", str(tmp_path), "--format", "json"])
    described = json.loads(result.output)["deepspeed-version"]
    assert described == "0.17.6 from pyproject.toml:3 ([tool.dslint] deepspeed-version)"
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "requirements.txt").unlink()
    (tmp_path / ".git").mkdir()  # a project root without pins (else the current directory's pins apply)
    result = CliRunner().invoke(main, ["settings", str(tmp_path)])
    assert f"deepspeed-version: {newest_known()} from default: the newest release dslint knows" in result.output


def test_a_bad_setting_names_the_file_and_key(tmp_path: Path) -> None:
    _project(tmp_path, {"pyproject.toml": '[tool.dslint]\ndeepspeed-version = "latest"\n'})
    with pytest.raises(SettingsError, match=r"pyproject.toml: \[tool.dslint\].deepspeed-version: expected"):
        SettingsResolver().for_path(tmp_path)


@pytest.mark.parametrize(
    ("specifier", "version"),
    [
        ("==0.14.0", "0.14.0"),
        (">=0.12,<0.15", "0.12.0"),
        (">=0.12, !=0.13.1, <0.15", "0.12.0"),
        ("~=0.14.2", "0.14.2"),
        ("==0.14.*", "0.14.0"),
        ("=0.14.0=py311_0", "0.14.0"),
        ("<=0.17.6", "0.17.6"),
        ("", None),
        ("!=0.14.1", None),
    ],
)
def test_a_specifier_resolves_to_the_lowest_version_it_admits(specifier: str, version: str | None) -> None:
    found = version_of_specifier(specifier)
    assert (str(found) if found else None) == version


def test_an_upper_bound_alone_resolves_to_the_newest_known_release_below_it() -> None:
    assert version_of_specifier("<0.15") == max(r for r in known_releases() if r < Version(0, 15, 0))


def _newest_below(bound: str) -> str:
    return str(max(r for r in known_releases() if r < Version.parse(bound)))  # type: ignore[operator]


@pytest.mark.parametrize(
    ("specifier", "newest"),
    [
        (">=0.13.5", str(newest_known())),
        ("~=0.14", str(newest_known())),  # PEP 440: >= 0.14 and == 0.*
        (">=0.12,<0.15", _newest_below("0.15")),
        (">=0.12, !=0.14.5, <0.15", str(max(r for r in known_releases() if r < Version(0, 14, 5)))),
        ("~=0.14.2", _newest_below("0.15")),
        ("==0.14.*", _newest_below("0.15")),
        ("==0.14.5", "0.14.5"),
        (">0.99", None),
        ("", None),
    ],
)
def test_the_newest_known_release_a_specifier_admits(specifier: str, newest: str | None) -> None:
    found = newest_of_specifier(specifier)
    assert (str(found) if found else None) == newest


def test_a_range_is_judged_at_its_newest_release_too(tmp_path: Path) -> None:
    """`deepspeed>=0.14` installs the newest release, which refuses `amp`; `==0.14.5` never does."""
    _project(tmp_path, {"requirements.txt": "deepspeed>=0.14\n", "ds_config.json": AMP_CONFIG})
    code, output = _check(tmp_path)
    assert code == 1, output
    finding = next(line for line in output.splitlines() if "DSL402" in line)
    assert "ds_config.json:3" in finding
    assert f"`deepspeed>=0.14` (requirements.txt:1) admits DeepSpeed {newest_known()}" in finding
    settings = CliRunner().invoke(main, ["settings", str(tmp_path)]).output
    assert f"it admits up to {newest_known()}" in settings

    (tmp_path / "requirements.txt").write_text("deepspeed==0.14.5\n")
    code, output = _check(tmp_path)
    assert code == 0 and "DSL402" not in output, output


def test_a_finding_at_both_ends_is_reported_once_without_the_note(tmp_path: Path) -> None:
    """A key both ends refuse is the lowest release's finding: one line, no note about the range."""
    config = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 3, "no_such_key": 1}\n}\n'
    _project(tmp_path, {"requirements.txt": "deepspeed>=0.14\n", "ds_config.json": config})
    _, output = _check(tmp_path)
    findings = [line for line in output.splitlines() if "ds_config.json:3" in line and "DSL403" in line]
    assert len(findings) == 1 and "admits" not in findings[0], output


def test_a_key_the_lowest_release_ignores_and_the_newest_refuses_is_the_refusal(tmp_path: Path) -> None:
    """`deepspeed>=0.9.0`: 0.9.0 reads `bf16` key by key and ignores `loss_scale` (DSL420), a fresh install's
    release refuses it (DSL403): the refusal, naming the pin, is the one finding there."""
    config = '{\n  "train_batch_size": 8,\n  "bf16": {"enabled": true, "loss_scale": 0}\n}\n'
    _project(tmp_path, {"requirements.txt": "deepspeed>=0.9.0\n", "ds_config.json": config})
    _, output = _check(tmp_path)
    findings = [line for line in output.splitlines() if "ds_config.json:3" in line]
    assert [("DSL403" in line, "admits" in line) for line in findings] == [(True, True)], output

    (tmp_path / "requirements.txt").write_text("deepspeed==0.9.0\n")
    _, output = _check(tmp_path)
    assert "DSL420" in output and "DSL403" not in output, output


def test_a_key_only_newer_releases_read_is_no_finding_under_a_range_that_admits_them(tmp_path: Path) -> None:
    """`torch_autocast` is read from 0.17.2 on: `deepspeed==0.14.5` needs an upgrade (DSL416); `>=0.14.5` installs
    a release that reads it."""
    config = '{\n  "train_batch_size": 8,\n  "torch_autocast": {"enabled": true}\n}\n'
    _project(tmp_path, {"requirements.txt": "deepspeed==0.14.5\n", "ds_config.json": config})
    _, output = _check(tmp_path)
    assert "DSL416" in output, output
    (tmp_path / "requirements.txt").write_text("deepspeed>=0.14.5\n")
    _, output = _check(tmp_path)
    assert "DSL416" not in output, output


@pytest.mark.parametrize(
    "text",
    [
        "import deepspeed.ops\n",
        "deepspeed-kernels==0.0.1\n",
        "git+https://github.com/microsoft/deepspeed.git@v0.14.0\n",
        "# deepspeed==0.9.0\n",
        "deepspeed\n",
    ],
)
def test_things_that_are_not_a_pin(tmp_path: Path, text: str) -> None:
    _project(tmp_path, {"requirements.txt": text})
    assert find_pin(tmp_path) is None
    assert resolve(tmp_path).version == newest_known()


def test_the_first_pinning_file_decides_in_the_documented_order(tmp_path: Path) -> None:
    _project(tmp_path, {"Dockerfile": "RUN pip install deepspeed==0.16.0\n", "requirements.txt": "deepspeed==0.15.1\n"})
    pin = find_pin(tmp_path)
    assert pin is not None and pin.version == Version(0, 15, 1) and pin.path.name == "requirements.txt"


def test_set_up_folders_pin_when_the_root_does_not(tmp_path: Path) -> None:
    """`setup/pip-requirements.txt` (or `environments/environment.yaml`, `docker/Dockerfile`) pins the project
    when no file at the root does; a root file that pins still comes first."""
    files = {"pyproject.toml": "[project]\nname = 'x'\n", "setup/pip-requirements.txt": "deepspeed==0.6.5\n"}
    _project(tmp_path, files)
    pin = find_pin(tmp_path)
    assert pin is not None and pin.version == Version(0, 6, 5) and pin.path.name == "pip-requirements.txt"
    _project(tmp_path, {"requirements.txt": "deepspeed==0.15.1\n"})
    pin = find_pin(tmp_path)
    assert pin is not None and pin.version == Version(0, 15, 1) and pin.path.name == "requirements.txt"


def test_set_up_folders_read_conda_and_docker_files(tmp_path: Path) -> None:
    _project(tmp_path, {"environments/environment-gpu.yaml": "dependencies:\n  - pip:\n    - deepspeed==0.9.2\n"})
    pin = find_pin(tmp_path)
    assert pin is not None and pin.version == Version(0, 9, 2)
    other = tmp_path / "other"
    _project(other, {"docker/Dockerfile": "RUN pip install deepspeed==0.12.6\n", "examples/requirements.txt": "x\n"})
    pin = find_pin(other)
    assert pin is not None and pin.version == Version(0, 12, 6)


def test_a_set_up_folder_s_own_folders_pin_too(tmp_path: Path) -> None:
    """`docker/cu124/requirements.txt` (an image a CUDA release) pins the project; a folder two levels down or
    outside the set-up folders does not."""
    _project(tmp_path, {"docker/cu124/requirements.txt": "torch\ndeepspeed==0.15.0\n"})
    pin = find_pin(tmp_path)
    assert pin is not None and pin.version == Version(0, 15, 0) and pin.path.parent.name == "cu124"
    other = tmp_path / "other"
    _project(
        other, {"docker/a/b/requirements.txt": "deepspeed==0.9.0\n", "src/cu124/requirements.txt": "deepspeed==0.9.0\n"}
    )
    assert find_pin(other) is None


def test_set_up_folders_read_the_pip_install_lines_of_shell_scripts(tmp_path: Path) -> None:
    """`setup/install.sh` running `pip install deepspeed==0.17.4` pins the project; a script that installs
    deepspeed without a version, or only mentions it, pins nothing."""
    script = "#!/bin/bash\nconda activate x\nDS_BUILD_CPU_ADAM=1 pip install deepspeed==0.17.4 --no-build-isolation\n"
    _project(tmp_path, {"setup/install.sh": script})
    pin = find_pin(tmp_path)
    assert pin is not None and pin.version == Version(0, 17, 4) and pin.path.name == "install.sh"
    other = tmp_path / "other"
    _project(other, {"setup/install.sh": "pip install deepspeed\necho deepspeed==0.3.0 is old\n"})
    assert find_pin(other) is None


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("0.14.2", "0.14.1"),  # 0.14.2 has 0.14.1's schema: the run's first patch stands for it
        ("0.16.3", "0.16.2"),  # before 0.16.4, which added `tensor_parallel`
        ("0.18.7", "0.18.6"),
        ("0.19.5", "0.19.4"),
        ("0.11.0", "0.11.2"),  # older than every known release of its minor: the oldest of them
        ("0.9.2", "0.10.0"),  # older than every known release: the oldest
        ("0.30.0", None),
    ],
)
def test_the_schema_of_the_nearest_known_release_judges(version: str, release: str | None) -> None:
    parsed = Version.parse(version)
    assert parsed is not None
    assert str(schema_release(parsed)) == (release or str(newest_known()))
    assert config_schema(parsed).version == (release or str(newest_known()))


def test_every_supported_release_has_schema_data() -> None:
    from dslint.config.deepspeed_releases import RELEASES

    assert set(schema_releases()) >= set(RELEASES) - set(UNIMPORTABLE_HERE)
    for release in schema_releases():
        schema = load_release_schema(release)
        assert schema.version == release and "train_batch_size" in schema.top_level_keys


# Releases that do not import beside torch 2.13 here (docs/deepspeed_versions.md says why): none at present.
UNIMPORTABLE_HERE: tuple[str, ...] = ()


def _lint_config(text: str, version: str) -> list[str]:
    selection = replace(RuleSelection(), deepspeed_version=version)
    found = lint_config_source("ds_config.json", text.encode(), selection, known_config=True).diagnostics
    return [f"{d.code} {d.message}" for d in found]


def test_a_key_of_a_newer_release_is_dsl416_not_a_typo() -> None:
    config = '{"train_batch_size": 8, "torch_autocast": {"enabled": false}}'
    found = _lint_config(config, "0.14")
    assert len(found) == 1 and found[0].startswith("DSL416"), found
    assert "ignores it silently" in found[0] and "DeepSpeed 0.14.0" in found[0]
    assert _lint_config(config, str(newest_known())) == []
    assert _lint_config('{"train_batch_size": 8, "torch_autocst": {}}', "0.14")[0].startswith("DSL401")


SCRIPT = """
import deepspeed
import torch
cfg = {"train_batch_size": 8, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
for x in loader:
    loss = engine(x).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(engine.parameters(), 1.0)
    engine.step()
"""


def _lint_script(version: str) -> dict[str, tuple[str, str]]:
    selection = replace(RuleSelection.from_options(["DSL301", "DSL305"]), deepspeed_version=version)
    found = lint_source("train.py", textwrap.dedent(SCRIPT).encode(), selection).diagnostics
    return {d.code: (d.severity.value, d.message) for d in found}


def test_loop_messages_follow_the_version() -> None:
    old = _lint_script("0.18.2")
    assert old["DSL301"][0] == "error" and "before 0.18.3" in old["DSL301"][1] and "silently" in old["DSL301"][1]
    assert "DeepSpeed 0.18.2 does not clip by default" in old["DSL305"][1]
    middle = _lint_script("0.19.2")
    assert "DSL301" not in middle  # ZeRO-2 without fp16: the direct call is supported since 0.18.3
    assert "does not clip by default" in middle["DSL305"][1]
    new = _lint_script("0.19.3")
    assert "does not clip" not in new["DSL305"][1] and new["DSL305"][1].startswith('set "gradient_clipping"')


def test_buffer_casting_by_version_is_in_the_rules_why() -> None:
    """The one-line message says what to do on every release; how buffers were cast before 0.19.2 is the why
    (`dslint explain DSL412`, the rule page, the `full` format)."""
    config = '{"train_batch_size": 8, "ignored_parameters": ["rotary_emb.*"]}'
    assert _lint_config(config, "0.19.1") == _lint_config(config, "0.19.2")
    assert _lint_config(config, "0.19.2")[0].endswith("ignores it silently; remove it")
    rule = rule_by_code("DSL412")
    assert rule is not None
    why = " ".join(rule.docs.why.split())
    assert "up to 0.19.1 the engine cast buffers" in why and "since 0.19.2 only parameters are cast" in why


def test_explain_says_from_which_version_a_rule_applies() -> None:
    result = CliRunner().invoke(main, ["explain", "DSL402"])
    assert "## DeepSpeed versions" in result.output and "0.19.7 and later" in result.output
    data = json.loads(CliRunner().invoke(main, ["explain", "DSL410", "--format", "json"]).output)
    assert data["deepspeed_versions"].startswith("0.15.0 and later")
    rule = rule_by_code("DSL416")
    assert rule is not None and rule.deepspeed_versions


@pytest.mark.parametrize("isolated", [False, True])
def test_each_project_of_a_repository_is_judged_by_its_own_pin(tmp_path: Path, isolated: bool) -> None:
    """Two projects side by side with their own requirements.txt and no pin at the top: `amp` is read by the
    0.14 project and refused by the 0.19.8 one, whether the run reads dslint's own settings or not."""
    _project(
        tmp_path,
        {
            "old/requirements.txt": "deepspeed==0.14.5\n",
            "old/training/ds_config.json": AMP_CONFIG,
            "new/requirements.txt": f"deepspeed=={newest_known()}\n",
            "new/training/ds_config.json": AMP_CONFIG,
        },
    )
    _, output = _check(tmp_path, *(["--isolated"] if isolated else []))
    flagged = {line.split(":")[0] for line in output.splitlines() if "DSL402" in line}
    assert flagged == {str(tmp_path / "new" / "training" / "ds_config.json")}, output


def test_an_example_requirements_file_without_a_pin_leaves_the_pin_to_the_package_above(tmp_path: Path) -> None:
    """An example's own requirements.txt lists extras but not deepspeed: the package's pin above it decides
    (`deepspeed==0.14.5` reads `amp`), not the default; a `.git` marks where the search stops."""
    _project(
        tmp_path,
        {
            "requirements.txt": "deepspeed==0.14.5\n",
            "examples/summarize/requirements.txt": "evaluate>=0.4\n",
            "examples/summarize/configs/ds_config.json": AMP_CONFIG,
        },
    )
    code, output = _check(tmp_path, "--isolated")
    assert code == 0 and "DSL402" not in output, output
    (tmp_path / "examples" / "summarize" / ".git").mkdir()  # a repository of its own: the search stops there
    code, output = _check(tmp_path, "--isolated")
    assert "DSL402" in output, output


def test_a_readme_code_block_listing_the_environment_pins_as_the_last_fallback(tmp_path: Path) -> None:
    """The root README's code blocks: a requirement line (`deepspeed == 0.9.2` among the listed packages) or a
    `pip install` command pins; prose does not; a requirements file, when there is one, comes first."""
    from dslint.project.deepspeed_version import find_pin

    listed = tmp_path / "listed"
    listed.mkdir()
    (listed / "README.md").write_text("Envs:\n```\ntorch==2.0.0\ndeepspeed == 0.9.2\n```\n", encoding="utf-8")
    pin = find_pin(listed)
    assert pin is not None and str(pin.version) == "0.9.2" and pin.line == 4
    installed = tmp_path / "installed"
    installed.mkdir()
    (installed / "README.md").write_text("```bash\npip install torch deepspeed==0.12.6\n```\n", encoding="utf-8")
    pin = find_pin(installed)
    assert pin is not None and str(pin.version) == "0.12.6"
    prose = tmp_path / "prose"
    prose.mkdir()
    (prose / "README.md").write_text("Tested with deepspeed == 0.9.2 on 8 GPUs.\n", encoding="utf-8")
    assert find_pin(prose) is None
    (listed / "requirements.txt").write_text("deepspeed==0.14.5\n", encoding="utf-8")
    pin = find_pin(listed)
    assert pin is not None and str(pin.version) == "0.14.5"


def test_the_roots_own_install_script_pins_the_project(tmp_path: Path) -> None:
    """A `setup.sh` at the root running `pip install "deepspeed==0.17.6" ...` (quoted, beside other packages)
    pins the project; a root script of another name (`train.sh`) is a launcher, not an install script."""
    script = '#!/bin/bash\npip install "deepspeed==0.17.6" "transformers==4.44.2" \\\n    "accelerate==1.0.1"\n'
    _project(tmp_path, {"README.md": "# x\n", "setup.sh": script})
    pin = find_pin(tmp_path)
    assert pin is not None and pin.version == Version(0, 17, 6) and pin.path.name == "setup.sh"
    other = tmp_path / "other"
    _project(other, {"README.md": "# x\n", "train.sh": script})
    assert find_pin(other) is None


def test_a_project_root_is_told_by_its_files(tmp_path: Path) -> None:
    """What makes a folder a project root: a marker that exists past its links, a requirements file (not a folder
    of that name), a requirements folder of text files, any Dockerfile."""
    from dslint.project.deepspeed_version import project_root

    def root(*files: str, folders: tuple[str, ...] = (), links: tuple[str, ...] = ()) -> bool:
        folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}" / "inner"
        folder.mkdir(parents=True)
        for name in files:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("")
        for name in folders:
            (folder / name).mkdir()
        for name in links:
            (folder / name).symlink_to(folder / "missing")
        return project_root(folder) == folder

    assert root("setup.py") and root("pyproject.toml") and root("requirements.txt") and root("requirements-dev.txt")
    assert root("requirements/base.txt") and root("Dockerfile.gpu") and root(folders=(".git",))
    assert not root("train.py") and not root("requirements/notes.md") and not root("requirements.in")
    assert not root(folders=("requirements-dev.txt",)) and not root(links=("setup.py", "requirements.txt"))


def test_a_nested_range_gives_way_to_an_exact_pin_above_that_it_admits(tmp_path: Path) -> None:
    """A vendored package's `deepspeed>=0.9.0` under a repository pinning `deepspeed==0.9.3`: an install of the
    repository gets 0.9.3, which satisfies both, so the files there are judged at 0.9.3, not at 0.9.0 and the
    newest release. An exact pin the range refuses, an exact nested pin, or a repository top between them leave
    the nearest pin deciding."""
    from dslint.project.deepspeed_version import PinFinder

    nested = tmp_path / "chat" / "training"
    nested.mkdir(parents=True)
    (tmp_path / "requirements.txt").write_text("torch\ndeepspeed==0.9.3\n", encoding="utf-8")
    (tmp_path / "chat" / "requirements.txt").write_text("deepspeed>=0.9.0\n", encoding="utf-8")
    assert PinFinder().pins_root(nested) == tmp_path
    (tmp_path / "requirements.txt").write_text("deepspeed==0.8.3\n", encoding="utf-8")
    assert PinFinder().pins_root(nested) == tmp_path / "chat"
    (tmp_path / "requirements.txt").write_text("deepspeed>=0.9.3\n", encoding="utf-8")
    assert PinFinder().pins_root(nested) == tmp_path / "chat"
    (tmp_path / "requirements.txt").write_text("deepspeed==0.9.3\n", encoding="utf-8")
    (tmp_path / "chat" / "requirements.txt").write_text("deepspeed==0.10.0\n", encoding="utf-8")
    assert PinFinder().pins_root(nested) == tmp_path / "chat"
    (tmp_path / "chat" / "requirements.txt").write_text("deepspeed>=0.9.0\n", encoding="utf-8")
    (tmp_path / "chat" / ".git").mkdir()
    assert PinFinder().pins_root(nested) == tmp_path / "chat"


def test_a_singular_requirement_file_pins(tmp_path: Path) -> None:
    """`requirement.txt` (a common spelling) pins as `requirements.txt` does, and marks a project root."""
    from dslint.project.deepspeed_version import PinFinder, find_pin

    (tmp_path / "requirement.txt").write_text("torch\ndeepspeed==0.6.1\n", encoding="utf-8")
    pin = find_pin(tmp_path)
    assert pin is not None and str(pin.version) == "0.6.1" and pin.line == 2
    (tmp_path / "src").mkdir()
    assert PinFinder().pins_root(tmp_path / "src") == tmp_path
