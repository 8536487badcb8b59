"""dslint/rules/pages/DSLxxx.md: one page per rule from its RuleDocs, kept in sync, and the links to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from dslint.framework import rule_pages
from dslint.framework.registry import all_rules


def test_every_rule_has_its_page_and_a_stale_or_edited_page_is_caught(tmp_path: Path) -> None:
    rule_pages.write(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{r.code}.md" for r in all_rules())
    assert rule_pages.out_of_date(tmp_path) == []
    (tmp_path / "DSL101.md").write_text("edited by hand\n", encoding="utf-8")
    (tmp_path / "DSL999.md").write_text("a rule that is gone\n", encoding="utf-8")
    assert rule_pages.out_of_date(tmp_path) == ["DSL101.md", "DSL999.md"]
    rule_pages.write(tmp_path)
    assert rule_pages.out_of_date(tmp_path) == []


def test_a_page_holds_the_rules_docs() -> None:
    rule = next(r for r in all_rules() if r.code == "DSL401")
    page = rule_pages.render_page(rule)
    assert page.splitlines()[1] == "# DSL401: unknown-top-level-config-key"
    assert "## Why is this bad?" in page and '```json\n{\n  "train_batch_size": 32,' in page


def test_links_point_at_each_rules_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSLINT_DOCS_URL", "https://github.com/o/dslint/blob/v2/README.md#rules")
    assert rule_pages.rule_url("DSL201") == "https://github.com/o/dslint/blob/v2/dslint/rules/pages/DSL201.md"
    monkeypatch.delenv("DSLINT_DOCS_URL")
    assert rule_pages.rule_url("DSL201") == (rule_pages.PAGES / "DSL201.md").as_uri()
    assert rule_pages.rule_url("DSL201", local=False) is None
