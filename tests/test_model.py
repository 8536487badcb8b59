"""The project model (dslint/model/): summaries cached by content, typed values, and answers keyed by position."""

from __future__ import annotations

from pathlib import Path

from dslint.model.fixpoint import ProjectModel
from dslint.model.summary import SummaryStore
from dslint.model.values import (
    NONE,
    Either,
    InitSite,
    Item,
    Keyed,
    LibraryFunction,
    Maybe,
    Packed,
    Param,
    Results,
    Returned,
    items,
    merge,
    unwrapped,
)

HELPER = b"""import deepspeed

def build(args, model):
    engine, _, _, _ = deepspeed.initialize(args=args, model=model)
    return engine
"""


def _exists(path: Path) -> bool:
    return path.exists()


def test_a_module_is_parsed_again_only_when_its_content_changes(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a.py"), str(tmp_path / "b.py")
    first = SummaryStore({a: b"def f(x):\n    return x\n", b: HELPER}, _exists)
    summary_a, summary_b = first.get(a), first.get(b)
    assert summary_a is not None and summary_b is not None
    edited = SummaryStore({a: b"def f(x):\n    return x + 1\n", b: HELPER}, _exists)
    assert edited.get(b) is summary_b  # unchanged module: the cached summary
    assert edited.get(a) is not summary_a


def test_a_relative_import_is_resolved_again_when_the_package_changes(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    path = str(package / "train.py")
    data = b"from .helpers import build\n"
    summary = SummaryStore({path: data}, _exists).get(path)
    assert summary is not None and summary.imports["build"] == "pkg.helpers.build"
    (package / "__init__.py").unlink()
    again = SummaryStore({path: data}, _exists).get(path)
    assert again is not summary and again is not None and again.imports["build"] == "helpers.build"


def test_values_merge_and_unwrap() -> None:
    origin = InitSite("t.py", 1, 1, "", None, False)
    engine = Item("engine", origin)
    assert merge([engine, engine]) == engine
    assert merge([engine, None]) == Maybe(engine)  # initialize on one path only
    assert merge([Maybe(engine), None]) is None
    assert merge([Results(("engine", None), origin), None]) is None
    assert unwrapped(engine) == Item("engine.module", origin)
    assert unwrapped(Param("m")) == Param("m", True)
    keyed = Keyed(("engine", "step"), ("engine", None), origin)
    assert keyed.item("engine") == engine and keyed.item("step") is None and keyed.item("other") is None
    # deepspeed.initialize held as a value: None on the other path leaves it (a call runs where it is held);
    # where it was taken does not change what it is
    held = LibraryFunction("deepspeed.initialize", ("a.py", 3))
    assert merge([held, NONE]) == held and merge([held, LibraryFunction("deepspeed.initialize")]) == held
    assert merge([held, None]) is None and merge([held, Param("f")]) is None
    assert items(Packed((None, held)), 2) == [None, held] and items(Packed((None, held)), 3) == [None] * 3
    # builders' returns bound on different paths: each may be the value (`Either`), a parameter kept on another
    # path among the options; a constant or an unknown value on a path is no option, and nothing but those is one
    wide, deep = Returned("m.py", "build_wide"), Returned("m.py", "build_deep")
    assert merge([wide, deep]) == Either((wide, deep)) and merge([wide, Param("model")]) == Either(
        (wide, Param("model"))
    )
    assert merge([Either((wide, deep)), NONE, deep, None]) == Either((wide, deep))
    assert merge([Param("a"), Param("b")]) is None and merge([engine, wide]) == Maybe(engine)


def test_answers_are_keyed_by_the_call_position_in_characters(tmp_path: Path) -> None:
    helper, train = str(tmp_path / "helper.py"), str(tmp_path / "train.py")
    caller = 'from helper import build\n\ndef main(args, net):\n    s = "é"; e = build(args, net)\n    return e\n'
    model = ProjectModel(SummaryStore({helper: HELPER, train: caller.encode()}, _exists))
    model.analyse_all([helper])
    found = {(h.caller_path, h.position, h.text) for h, *_ in model.result_helpers()}
    column = caller.splitlines()[3].index("build") + 1  # characters, as libcst counts
    assert found == {(train, (4, column), "build")}


def test_methods_are_found_along_the_bases_and_overrides_in_subclasses(tmp_path: Path) -> None:
    from dslint.model.classes import Hierarchy

    base, sub, loop = str(tmp_path / "base.py"), str(tmp_path / "sub.py"), str(tmp_path / "loop.py")
    sources = {
        base: b"class Base:\n    def fit(self):\n        self.step()\n\n    def step(self):\n        pass\n",
        sub: b"from base import Base\n\nclass Sub(Base):\n    def step(self):\n        pass\n",
        loop: b"class A(B):\n    pass\n\nclass B(A):\n    pass\n",
    }
    hierarchy = Hierarchy(SummaryStore(sources, _exists))
    assert hierarchy.method((sub, "Sub"), "fit") == (base, "Base.fit")  # inherited
    assert hierarchy.method((sub, "Sub"), "step") == (sub, "Sub.step")  # its own first
    assert hierarchy.overrides((base, "Base"), "step") == [(sub, "Sub.step")]
    assert hierarchy.method((loop, "A"), "missing") is None  # a cycle of bases ends
    assert set(hierarchy.subclasses((loop, "A"))) <= {(loop, "A"), (loop, "B")}  # and the search ends
    assert hierarchy.subclasses((sub, "Sub")) == []


def _common_name_project(tmp_path: Path, also: dict[str, bytes]) -> ProjectModel:
    """loop.main() receives train.py's engine; thirty other modules define and call a `main` of their own, more
    than the fixpoint reads for one name (MAX_NAME_FILES)."""
    sources = {
        str(tmp_path / "train.py"): b"import deepspeed\nfrom loop import main\n\n"
        b"engine, *_ = deepspeed.initialize(model=object())\nmain(engine)\n",
        str(tmp_path / "loop.py"): b"def main(engine):\n    engine.step()\n",
    }
    for number in range(30):
        sources[str(tmp_path / f"tool{number}.py")] = b"def main(x):\n    return x\n\n\nmain(1)\n"
    sources.update({str(tmp_path / name): data for name, data in also.items()})
    model = ProjectModel(SummaryStore(sources, _exists))
    model.analyse_all([str(tmp_path / "train.py")])
    return model


def test_a_common_name_is_followed_into_the_files_that_import_its_module(tmp_path: Path) -> None:
    """`main(` is called in 31 files, but only train.py imports loop: loop.main's parameter is the engine."""
    found = _common_name_project(tmp_path, {}).engine_parameters()
    assert set(found) == {(str(tmp_path / "loop.py"), "main", "engine")}
    # another importer passing something else: every call is seen, and the parameter stays unknown
    other = _common_name_project(tmp_path, {"check.py": b"from loop import main\n\nmain(None)\n"})
    assert other.engine_parameters() == {}


def test_an_import_resolves_to_the_module_beside_the_importing_script_first() -> None:
    """Three copies of `engines/engine.py` (a project and two older copies of it in sub-folders): each script's
    `import engines.engine` is the copy under its own folder, as `sys.path[0]` makes it; a module found nowhere
    there is the nearest copy."""
    from dslint.model.summary import ModuleFinder

    copies = ["/p/slr/code/engines/engine.py", "/p/code/engines/engine.py", "/p/engines/engine.py"]
    finder = ModuleFinder([*copies, "/p/code/utils/__init__.py", "/p/utils/__init__.py"])
    assert finder.find("engines.engine", "/p/run.py") == "/p/engines/engine.py"
    assert finder.find("engines.engine", "/p/code/run.py") == "/p/code/engines/engine.py"
    assert finder.find("engines.engine", "/p/slr/code/run.py") == "/p/slr/code/engines/engine.py"
    assert finder.find("utils", "/p/code/run.py") == "/p/code/utils/__init__.py"
    assert finder.find("engines.engine", "/p/slr/tools/x.py") == "/p/slr/code/engines/engine.py"  # nearest


def test_a_name_a_package_star_imports_from_its_module_is_that_modules(tmp_path: Path) -> None:
    """`from pkg import load` where `pkg/__init__.py` does `from .loaders import *`: the function of
    pkg/loaders.py; a name the star-imported module does not define is not followed anywhere."""
    from dslint.model.evaluate import Evaluator
    from dslint.project.inputs import exists

    (tmp_path / "pkg").mkdir()
    files = {
        tmp_path / "pkg" / "__init__.py": "from .loaders import *\n",
        tmp_path / "pkg" / "loaders.py": "def load(name):\n    return name\n",
        tmp_path / "train.py": "from pkg import load\n",
    }
    for path, text in files.items():
        path.write_text(text)
    store = SummaryStore({str(p): t.encode() for p, t in files.items()}, exists)
    found = Evaluator(store).hierarchy.follow("pkg.load", str(tmp_path / "train.py"))
    assert found is not None and (found[0].path, found[1]) == (str(tmp_path / "pkg" / "loaders.py"), "load")
    assert Evaluator(store).hierarchy.follow("pkg.missing", str(tmp_path / "train.py")) is None


def test_a_parameter_annotated_with_a_project_class_holds_its_instance(tmp_path: Path) -> None:
    holders = b"""import deepspeed

class Pair:
    def __init__(self, args, net):
        self.engine, _, _, _ = deepspeed.initialize(args=args, model=net)
"""
    users = b"""import typing
from holders import Pair

def plain(pair: Pair):
    return pair.engine

def optional(pair: typing.Optional[Pair] = None):
    return pair.engine

def union(pair: "Pair | None"):
    return pair.engine

def other(pair: int, extra: "Pair[", unknown: Missing):
    return pair.engine
"""
    holder, user = str(tmp_path / "holders.py"), str(tmp_path / "users.py")
    model = ProjectModel(SummaryStore({holder: holders, user: users}, _exists))
    model.analyse_all([holder])
    module = model.module(user)
    assert module is not None
    for name in ("plain", "optional", "union"):
        assert model.annotated_classes(module, name) == {"pair": (holder, "Pair")}
        assert isinstance(model.returned((user, name)), Item)  # read once the class keeps an engine
    assert model.annotated_classes(module, "other") == {}
    assert model.returned((user, "other")) is None
