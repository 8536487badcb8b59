"""DSL205: the `(load_path, client_state)` result of `engine.load_checkpoint(...)` is ignored."""

from __future__ import annotations

import re

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.conditions import TRUTHINESS
from dslint.script.checked_load import checked_load_edit
from dslint.script.engine_calls import is_engine_method_call
from dslint.script.facts import BindingKind, Scope, ScopeKind
from dslint.script.latest_reads import latest_read_after
from dslint.script.names import dotted_name
from dslint.script.walk import all_nodes

# A guard's subject that tests a path exists (its truth holding on the call's path).
_EXISTENCE = re.compile(r"(?:\bexists|\bisdir|\bisfile|\bis_dir|\bis_file|\blexists)\(")


# string methods whose result is unpacked into strings, never None
_SPLITS = frozenset({"split", "rsplit", "partition", "rpartition", "splitlines"})
# A string's methods that return a string (`handle.read().strip()`), never None.
_STRING_METHODS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "decode"})


class LoadCheckpointResultIgnored(ScriptRule):
    code = "DSL205"
    slug = "load-checkpoint-result-ignored"
    message = "engine.load_checkpoint returns (None, None) when it finds no checkpoint; check its load_path"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags `engine.load_checkpoint(...)` used as a statement of its own, its result thrown away.
            Also `_, _ = engine.load_checkpoint(...)` (bound only to throwaway names; no rewrite offered), and
            `_, client_state = ...` in a function that never mentions those names again. (A `client_state` the
            function reads is not flagged: `client_state[...]` fails loudly on the `None`.) Nor is a call given a
            tag that is never None (a string literal or f-string, `str(...)`, a string built with `+` or `%`,
            `os.path.basename(...)`, a string's own method's result, `handle.read().strip()`, a name bound to one
            of these or unpacked from `os.path.split(...)` or a string's `split(...)`, or bound where its value
            was tested not None: the
            `else` of `if args.tag is None:`): with a tag, a missing checkpoint raises instead; nor a tag the call
            is guarded by (`if tag is not None:`, `if tag:`, `if cfg.get("tag"):` for `cfg["tag"]`) or a parameter
            annotated `str` without a default. A
            tag that may be None (`tag=args.tag`, an option without a default) is flagged.
            Nor is a load followed in its own block, before anything that may leave it or skip a line (`if`,
            `try`, a loop), by an `open` of the same directory's `latest` file (`os.path.join(dir, "latest")`):
            when the checkpoint is missing, that read raises `FileNotFoundError`. A read of another directory's
            `latest`, or one under an `if`, does not count. Nor is a load that runs only where its folder was found
            to exist (`if os.path.isdir(ckpt_dir):`, after `if not os.path.exists(ckpt_dir): ... return`): the
            script handles the missing checkpoint itself. A test of another path does not count. Nor is a load
            of the folder the script's own engine saves into (`engine.save_checkpoint(...)` given the same folder,
            written the same way: a literal path or `args.save_dir` anywhere in the file, a plain name later in
            the same function), run on every path of its function: resume if present, where the first run's fresh
            start is the intent. Under an `if` that decided there is a run to resume, the load must find it.
        """,
        why="""
            `load_checkpoint` returns `(load_path, client_state)`. When no tag is given and the directory has
            no `latest` file (a wrong path, a checkpoint written with `save_latest=False`, a plain file), it
            logs a warning and returns `(None, None)` (runtime/engine.py `load_checkpoint`): training then
            starts from scratch, and nothing stops it. With an explicit tag DeepSpeed skips the `latest` file
            and globs `{dir}/{tag}/*model_states.pt`; when nothing is there its checkpoint loader fails an
            assertion (`state_dict_factory.py: SDLoaderBase.check_ckpt_list`), so the run stops and there is
            no silent `(None, None)` to check.
        """,
        example="""
            engine.load_checkpoint(args.load_dir)
        """,
        use_instead="""
            load_path, client_state = engine.load_checkpoint(args.load_dir)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.load_dir}")
        """,
        fix_safety="""
            The fix (for the statement form) binds the result and raises `FileNotFoundError` when `load_path`
            is None. It is unsafe: a script that means "resume if there is something to resume" must keep
            going instead; write that branch by hand.
        """,
    )
    valid = (
        # the `latest` file a load without a tag reads is tested first
        Valid(
            """
            import os
            import deepspeed
            def resume(args, net):
                engine, *_ = deepspeed.initialize(args=args, model=net)
                if os.path.isfile(os.path.join(args.ckpt_dir, "latest")):
                    engine.load_checkpoint(args.ckpt_dir)
            """
        ),
        # the state it returns is read (a missing checkpoint fails loudly on the None), in a nested function too
        Valid(
            """
            import deepspeed
            def finetune(args, net):
                engine, *_ = deepspeed.initialize(args=args, model=net)
                load_path, client_state = engine.load_checkpoint(args.pretrained_dir)
                def start():
                    return client_state["step"]
                step = start()
            """
        ),
        # resume if present: the folder is the one the script's engine saves into
        Valid(
            """
            import deepspeed
            def main(args, net, loader, model_dir):
                engine, *_ = deepspeed.initialize(args=args, model=net)
                engine.load_checkpoint("./checkpoints/classifier/")
                engine.load_checkpoint(args.output_dir)
                engine.load_checkpoint(model_dir)
                for epoch in range(3):
                    train_one(engine, loader)
                    engine.save_checkpoint(model_dir)
                engine.save_checkpoint("./checkpoints/classifier/")
                engine.save_checkpoint(args.output_dir)
            """
        ),
        # the tag is read from the `latest` file (a string's strip()), or is the option tested not None
        Valid(
            """
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            if args.resume_tag is None:
                with open(os.path.join(args.load_dir, "latest")) as handle:
                    tag = handle.read().strip()
            else:
                tag = args.resume_tag
            engine.load_checkpoint(args.load_dir, tag=tag)
            """
        ),
        # the folder is tested first, and the fresh start is the script's own choice
        Valid(
            """
            import os
            import deepspeed

            def resume(engine, ckpt_dir):
                if not os.path.exists(ckpt_dir):
                    print("no checkpoint: starting fresh")
                    return
                engine.load_checkpoint(ckpt_dir)

            def main(model):
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
                if os.path.isdir(args.resume):
                    engine.load_checkpoint(args.resume)
                resume(engine, "ckpt")
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            def resume(folder, tag=None, weights_tag: str = "best"):
                if tag is not None:
                    engine.load_checkpoint(folder, tag=tag)
            def load(folder: str, ckpt_id: str):
                engine.load_checkpoint(folder, ckpt_id)
            def from_settings(folder, cfg):
                if cfg.get("resume_tag"):  # the item tested, then read
                    tag = cfg["resume_tag"]
                    engine.load_checkpoint(folder, tag=tag)
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            load_path, client_state = engine.load_checkpoint(args.load_dir)
            if load_path is None:
                print("starting from scratch")
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            other.load_checkpoint(args.load_dir)
            """
        ),
        Valid(
            """
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            if os.path.isdir(args.resume):
                folder, step = os.path.split(args.resume)
                engine.load_checkpoint(folder, tag=step)
            engine.load_checkpoint(args.save_dir, f"global_step{args.step}")
            name = "best"
            engine.load_checkpoint(args.save_dir, tag=name)
            *parts, last = args.resume_from.split("/")
            engine.load_checkpoint("/".join(parts), tag=last)
            """
        ),
        Valid(
            """
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            if os.path.isdir(cfg.ckpt_dir):
                engine.load_checkpoint(f"./{cfg.ckpt_dir}/")
                marker = os.path.join(f"./{cfg.ckpt_dir}", "latest")
                with open(marker) as handle:
                    step = int(handle.read().strip().split("step")[-1])
            """
        ),
    )
    invalid = (
        # the result bound to names the function never mentions again: thrown away all the same
        Invalid(
            """
            import deepspeed
            def finetune(args, net):
                engine, *_ = deepspeed.initialize(args=args, model=net)
                _, client_state = engine.load_checkpoint(args.pretrained_dir)
                for batch in loader:
                    engine.backward(engine(batch))
                    engine.step()
            """,
            lines=(5,),
        ),
        # the folder read is not the one saved into (or a plain name saved only before the load)
        Invalid(
            """
            import deepspeed
            def main(args, net, model_dir):
                engine, *_ = deepspeed.initialize(args=args, model=net)
                engine.save_checkpoint(model_dir)
                engine.load_checkpoint(model_dir)
                engine.load_checkpoint("./pretrained/")
                engine.save_checkpoint("./checkpoints/run/")
                if args.resume_step > 0:
                    engine.load_checkpoint(args.output_dir)
                engine.save_checkpoint(args.output_dir)
            """,
            lines=(6, 7, 10),
            fixed="""
            import deepspeed
            def main(args, net, model_dir):
                engine, *_ = deepspeed.initialize(args=args, model=net)
                engine.save_checkpoint(model_dir)
                load_path, _ = engine.load_checkpoint(model_dir)
                if load_path is None:
                    raise FileNotFoundError(f"no DeepSpeed checkpoint in {model_dir}")
                load_path, _ = engine.load_checkpoint("./pretrained/")
                if load_path is None:
                    raise FileNotFoundError("no DeepSpeed checkpoint to load")
                engine.save_checkpoint("./checkpoints/run/")
                if args.resume_step > 0:
                    load_path, _ = engine.load_checkpoint(args.output_dir)
                    if load_path is None:
                        raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.output_dir}")
                engine.save_checkpoint(args.output_dir)
            """,
        ),
        # the test is of another option than the tag's: the tag may still be None
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            tag = None
            if args.resume is not None:
                tag = args.resume_tag
            engine.load_checkpoint(args.load_dir, tag=tag)
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            tag = None
            if args.resume is not None:
                tag = args.resume_tag
            load_path, _ = engine.load_checkpoint(args.load_dir, tag=tag)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.load_dir}")
            """,
        ),
        # the test is of another folder (the logs), not of the checkpoint's
        Invalid(
            """
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            if os.path.isdir(args.log_dir):
                engine.load_checkpoint(args.resume)
            """,
            lines=(6,),
            fixed="""
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            if os.path.isdir(args.log_dir):
                load_path, _ = engine.load_checkpoint(args.resume)
                if load_path is None:
                    raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.resume}")
            """,
        ),
        Invalid(
            """
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            engine.load_checkpoint(args.load_dir)
            if os.path.exists(os.path.join(args.load_dir, "latest")):
                step = open(os.path.join(args.load_dir, "latest")).read()
            engine.load_checkpoint(args.resume_dir)
            with open(os.path.join(args.save_dir, "latest")) as handle:
                step = handle.read()
            """,
            lines=(5, 8),
            fixed="""
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            load_path, _ = engine.load_checkpoint(args.load_dir)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.load_dir}")
            if os.path.exists(os.path.join(args.load_dir, "latest")):
                step = open(os.path.join(args.load_dir, "latest")).read()
            load_path, _ = engine.load_checkpoint(args.resume_dir)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.resume_dir}")
            with open(os.path.join(args.save_dir, "latest")) as handle:
                step = handle.read()
            """,
        ),
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            engine.load_checkpoint(args.load_dir, tag=args.tag)
            """,
            lines=(4,),
            fixed="""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            load_path, _ = engine.load_checkpoint(args.load_dir, tag=args.tag)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.load_dir}")
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def resume(self, path):
                    if path:
                        self.engine.load_checkpoint(path + "/ckpt")
                    _, state = self.engine.load_checkpoint(path)  # `state` never read: thrown away too
                    _, _ = self.engine.load_checkpoint(path)
                def setup(self):
                    self.engine, _, _, _ = deepspeed.initialize(model=self.net, config=self.cfg)
            """,
            lines=(6, 7, 8),
            fixed="""
            import deepspeed
            class Trainer:
                def resume(self, path):
                    if path:
                        load_path, _ = self.engine.load_checkpoint(path + "/ckpt")
                        if load_path is None:
                            raise FileNotFoundError("no DeepSpeed checkpoint to load")
                    _, state = self.engine.load_checkpoint(path)  # `state` never read: thrown away too
                    _, _ = self.engine.load_checkpoint(path)
                def setup(self):
                    self.engine, _, _, _ = deepspeed.initialize(model=self.net, config=self.cfg)
            """,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_engine_method_call(self.facts, node, "load_checkpoint"):
            return
        tag = self._tag(node)
        if tag is not None and (self._never_none(tag, node, 0) or self._tested_not_none(tag, node)):
            return  # with a tag, a missing checkpoint raises: there is no (None, None)
        statement = self.facts.statement_of(node)
        if statement is not None and latest_read_after(self.facts, node, statement):
            return  # `{dir}/latest` is opened right after: a missing checkpoint raises there
        if self._existence_tested(node):
            return  # the caller tests that the checkpoint is there first (and says what happens when not)
        if self._own_save_directory(node):
            return  # resume if present: the script saves there itself, and a first run starts fresh by design
        line = self.facts.lone_expression_statement(node)
        if line is None:
            if self._discarded_into_underscores(node) or self._bound_never_read(node):
                self.report(node)  # `_, _ = engine.load_checkpoint(...)`: no rewrite offered
            return
        self.report(
            node,
            edits=self._fix(node, line),
            applicability=Applicability.UNSAFE,
            fix_message="Check the result: raise when load_path is None",
        )

    @staticmethod
    def _tag(node: cst.Call) -> cst.BaseExpression | None:
        """The `tag` argument (by keyword, or second positional)."""
        positional = [a for a in node.args if a.keyword is None]
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "tag":
                return arg.value
        if len(positional) > 1 and not any(a.star for a in positional[:2]):
            return positional[1].value
        return None

    def _never_none(self, value: cst.BaseExpression, at: cst.CSTNode, depth: int) -> bool:
        """Whether `value` is a string (or number) on every path: literals, f-strings, `str(...)`, strings built
        with `+` or `%`, `os.path.basename(...)`, a name bound to one of these or unpacked from
        `os.path.split(...)` or a string's `split`/`rsplit`/`partition`."""
        if depth > 4:
            return False
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer)):
            return True
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Add, cst.Modulo)):
            return any(
                isinstance(side, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
                for side in (value.left, value.right)
            )
        facts = self.facts
        if isinstance(value, cst.Call):
            name = facts.qualified(value.func) or ""
            if name in ("str", "os.path.basename", "builtins.str"):
                return True
            if isinstance(value.func, cst.Attribute) and value.func.attr.value in _STRING_METHODS:
                return True  # `handle.read().strip()`: a string's (or bytes') own method returns one
            return isinstance(value.func, cst.Attribute) and isinstance(
                value.func.value, (cst.SimpleString, cst.FormattedString)
            )  # `"step{}".format(n)`, `"_".join(parts)`
        if isinstance(value, cst.Name):
            binding = facts.binding_at(value.value, facts.scope_at(at), facts.start(at))
            if binding is None:
                return False
            if binding.value is not None:
                if binding.statement is not None and self._tested_not_none(binding.value, binding.statement):
                    return True  # `else: tag = args.tag` after `if args.tag is None:`
                return self._never_none(binding.value, binding.statement or at, depth + 1)
            statement = binding.statement
            if not (isinstance(statement, cst.Assign) and isinstance(statement.value, cst.Call)):
                return False
            func = statement.value.func
            # `head, tag = os.path.split(path)`, `*parts, tag = path.split("/")`: each part is a string
            return facts.qualified(func) == "os.path.split" or (
                isinstance(func, cst.Attribute) and func.attr.value in _SPLITS
            )
        return False

    def _own_save_directory(self, load: cst.Call) -> bool:
        """The load runs on every path of its function (no `if` decided that there is a run to resume) and reads
        the folder this script's engine saves into (`engine.save_checkpoint(...)` given the same folder, written
        the same way): a literal path or an attribute chain (`args.save_dir`) anywhere in the file, a plain name
        in the same function after the load. The load resumes a run when there is one; on the first run the
        missing checkpoint is the intended fresh start."""
        folder = next((a.value for a in load.args if a.keyword is None or a.keyword.value == "load_dir"), None)
        if folder is None or self.facts.held_by(load, (cst.If, cst.For, cst.While, cst.Try)):
            return False  # a load under a test that decided there is a run to resume must find it
        text = self.context.code(folder)
        plain_name = isinstance(folder, cst.Name)
        if not (plain_name or isinstance(folder, (cst.SimpleString, cst.Attribute))):
            return False
        scope, start = self.facts.scope_at(load), self.facts.start(load)
        for call in self.facts.statement_of_call:
            if not is_engine_method_call(self.facts, call, "save_checkpoint") or not call.args:
                continue
            saved = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "save_dir"), None)
            if saved is None or self.context.code(saved) != text:
                continue
            if not plain_name or (self.facts.scope_at(call) is scope and self.facts.start(call) > start):
                return True
        return False

    def _existence_tested(self, at: cst.Call) -> bool:
        """The call runs only where its checkpoint folder was found to exist (`if os.path.isdir(ckpt_dir):`, after
        `if not os.path.exists(ckpt_dir): return`): the folder as the call's first argument names it."""
        folder = next((a.value for a in at.args if a.keyword is None or a.keyword.value == "load_dir"), None)
        name = dotted_name(folder) if folder is not None else None
        if name is None:
            return False
        return any(
            guard.truth
            and guard.value == TRUTHINESS
            and _EXISTENCE.search(guard.subject)
            # the folder itself, or the `latest` file in it that a load without a tag reads
            and (f"({name})" in guard.subject or f"join({name}, 'latest')" in guard.subject)
            for guard in self.facts.paths.at(at)
        )

    def _tested_not_none(self, tag: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """`at` (the call, or the statement binding the tag's name) runs only where the tag was tested not None
        (`if tag is not None:`, `if tag:`, the `else` of `if tag is None:`), or the tag is a parameter annotated
        `str`."""
        name = dotted_name(tag) or _item_subject(tag)
        if name is None:
            return False
        for guard in self.facts.paths.at(at):
            if guard.subject == name and (
                (guard.value == "None" and not guard.truth) or (guard.value == TRUTHINESS and guard.truth)
            ):
                return True
        binding = self.facts.binding_at(name, self.facts.scope_at(at), self.facts.start(at))
        if binding is None or binding.kind is not BindingKind.PARAMETER:
            return False
        function = binding.scope.node
        if not isinstance(function, cst.FunctionDef):
            return False
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == name:
                annotation = param.annotation
                return annotation is not None and dotted_name(annotation.annotation) == "str" and param.default is None
        return False

    def _bound_never_read(self, node: cst.Call) -> bool:
        """`_, client_state = engine.load_checkpoint(...)` whose names no code of its function (nested ones
        included) ever mentions again: the result is thrown away all the same."""
        bound = self._result_targets(node)
        if bound is None or len(bound[0].targets) != 1 or not all(isinstance(e, cst.Name) for e in bound[1]):
            return False  # `self.client_state = ...`, a starred or nested target: kept somewhere
        elements = bound[1]
        names = {e.value for e in elements if isinstance(e, cst.Name)} - {"_"}
        scope: Scope | None = self.facts.scope_at(node)
        while scope is not None and scope.kind is ScopeKind.CLASS:
            scope = scope.parent
        if (
            not names
            or scope is None
            or scope.kind is not ScopeKind.FUNCTION
            or "locals()" in self.context.code(scope.node)
        ):
            return False  # a module-level name may be imported and read elsewhere
        mentioned = (n for n in all_nodes(scope.node) if isinstance(n, cst.Name) and n.value in names)
        return all(any(n is e for e in elements) for n in mentioned)

    def _discarded_into_underscores(self, node: cst.Call) -> bool:
        """`_, _ = engine.load_checkpoint(...)` or `_ = ...`: the result is bound only to throwaway names."""
        bound = self._result_targets(node)
        return (
            bound is not None and bool(bound[1]) and all(isinstance(n, cst.Name) and n.value == "_" for n in bound[1])
        )

    def _result_targets(self, node: cst.Call) -> tuple[cst.Assign, list[cst.BaseExpression]] | None:
        """The assignment `node` is the value of, and what it binds: each target, a tuple's or list's elements."""
        statement = self.facts.small_statement_of_call.get(node)
        if not isinstance(statement, cst.Assign) or statement.value is not node:
            return None
        names: list[cst.BaseExpression] = []
        for target in statement.targets:
            value = target.target
            if isinstance(value, (cst.Tuple, cst.List)):
                names.extend(element.value for element in value.elements)
            else:
                names.append(value)
        return statement, names

    def _fix(self, node: cst.Call, line: cst.SimpleStatementLine) -> list[Edit]:
        first = node.args[0] if node.args else None
        directory = self.context.code(first.value) if first is not None and not first.star else ""
        return [checked_load_edit(self.context, line, self.context.code(node), directory)]


def _item_subject(node: cst.BaseExpression) -> str | None:
    """`cfg["k"]` (or `cfg.get("k")`) as the path guards name it: "cfg['k']"."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        key = index.value if isinstance(index, cst.Index) else None
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
        key = node.args[0].value if len(node.args) == 1 and node.args[0].keyword is None else None
        node = node.func
    else:
        return None
    base = dotted_name(node.value) if isinstance(node, (cst.Subscript, cst.Attribute)) else None
    if base is None or not isinstance(key, cst.SimpleString) or not isinstance(key.evaluated_value, str):
        return None
    return f"{base}[{key.evaluated_value!r}]"
