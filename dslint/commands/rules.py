"""`dslint rules` (a table of every rule) and `dslint explain CODE` (one rule's docs)."""

from __future__ import annotations

import click

from dslint.registry import all_rules, rule_by_code


@click.command()
def rules() -> None:
    """List every rule."""
    for rule in all_rules():
        fix = "fix" if rule.fixable else ""
        click.echo(f"{rule.code}  {rule.slug:<40} {rule.severity.value:<8} {fix}")


@click.command()
@click.argument("code")
def explain(code: str) -> None:
    """Show the documentation of one rule (by code or slug)."""
    wanted = code.strip().upper()
    rule = rule_by_code(wanted) or next((r for r in all_rules() if r.slug == code.strip()), None)
    if rule is None:
        raise click.BadParameter(f"no rule {code!r}; `dslint rules` lists them", param_hint="CODE")
    click.echo(rule.docs.render(rule.code, rule.slug))
