"""Which DeepSpeed release first reads a config key, from the committed schemas of the releases dslint knows.

A key the project's DeepSpeed does not have may be a typo (DSL401, DSL403) or a key of a newer release
(DSL416): this module tells them apart. The newer schemas are loaded only when a key is unknown.
"""

from __future__ import annotations

from dslint.config.schema import Model, Schema, load_release_schema, model_of
from dslint.config.versions import Version, known_releases, schema_release


def _newer_schemas(version: Version) -> list[tuple[Version, Schema]]:
    judged_by = schema_release(version)
    return [(release, load_release_schema(str(release))) for release in known_releases() if judged_by < release]


def first_release_with_top_level_key(key: str, version: Version) -> Version | None:
    """The oldest known release newer than `version`'s schema that reads (and does not refuse) top-level `key`."""
    for release, schema in _newer_schemas(version):
        if key in schema.live_top_level_keys:
            return release
    return None


def _model_at(schema: Schema, path: tuple[str, ...]) -> Model | None:
    """The model validating the object at `path` (`("zero_optimization", "offload_param")`), if any."""
    model = schema.section_model(path[0])
    for key in path[1:]:
        field = model.field(key) if model is not None else None
        model = model_of(field.type, schema) if field is not None else None
    return model


def first_release_with_section_key(path: tuple[str, ...], version: Version) -> Version | None:
    """The oldest known release newer than `version`'s schema whose model at `path[:-1]` has the key `path[-1]`
    (by name or alias; not one it lists as removed)."""
    for release, schema in _newer_schemas(version):
        model = _model_at(schema, path[:-1])
        if model is None or model.field(path[-1]) is None:
            continue
        if path[:-1] == ("zero_optimization",) and path[-1] in schema.removed_zero:
            continue
        return release
    return None


def first_release_reading_section_key(section: str, key: str, version: Version) -> Version | None:
    """The oldest known release newer than `version`'s schema that reads `key` in the top-level `section`:
    by its pydantic model (name or alias), or, where it reads the section as a plain dict, by asking for it."""
    for release, schema in _newer_schemas(version):
        model = schema.section_model(section)
        if model is not None and model.field(key) is not None:
            return release
        read = schema.read_section_keys.get(section)
        if read is not None and key in read:
            return release
    return None


def last_release_reading_section_key(section: str, key: str, version: Version) -> Version | None:
    """The newest known release older than `version`'s schema that reads `key` in the top-level `section` as a
    plain dict (a key renamed since: `aio.thread_count`, now `intra_op_parallelism`)."""
    judged_by = schema_release(version)
    for release in reversed(known_releases()):
        if release >= judged_by:
            continue
        read = load_release_schema(str(release)).read_section_keys.get(section)
        if read is not None and key in read:
            return release
    return None
