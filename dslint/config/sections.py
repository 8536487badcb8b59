"""Walking the sections DeepSpeed validates with its pydantic models (`extra="forbid"`), field by field."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dslint.config.facts import bfloat16_ignored, is_auto
from dslint.config.schema import Field, Model, Schema, model_of
from dslint.config.tree import Entry, Object


@dataclass(frozen=True)
class SectionEntry:
    path: tuple[str, ...]  # keys from the top, ending with this entry's key
    model: Model
    entry: Entry
    field: Field | None  # None: the model has no such field
    parent: Object  # the object holding the entry


def validated_entries(root: Object, schema: Schema) -> Iterator[SectionEntry]:
    """Every entry inside a validated section (nested models included), except `"auto"` values, which
    DeepSpeed drops before validating (`DeepSpeedConfigModel.__init__`, strict=False), and except the older
    `bfloat16` section beside `bf16`, which DeepSpeed does not read (DSL401 says so)."""
    for top in root.last_entries():
        model = schema.section_model(top.key)
        if model is None or not isinstance(top.value, Object) or (top.value.opaque and not top.value.written):
            continue
        if top.key == "bfloat16" and bfloat16_ignored(root):
            continue
        yield from _walk(top.value, model, (top.key,), schema)


def _walk(node: Object, model: Model, path: tuple[str, ...], schema: Schema) -> Iterator[SectionEntry]:
    for entry in node.last_entries():
        if is_auto(entry.value):
            continue
        field = model.field(entry.key)
        yield SectionEntry((*path, entry.key), model, entry, field, node)
        if field is None or not isinstance(entry.value, Object) or (entry.value.opaque and not entry.value.written):
            continue
        inner = model_of(field.type, schema)
        if inner is not None:
            yield from _walk(entry.value, inner, (*path, entry.key), schema)
