"""`dslint rules` (a table of every rule) and `dslint explain CODE` (one rule's docs)."""

from __future__ import annotations

import json
import textwrap

import click

from dslint.framework.catalog import REDIRECTS, lifecycle
from dslint.framework.registry import all_rules, rule_by_code
from dslint.framework.rule import Rule


def deepspeed_versions(rule: type[Rule]) -> str:
    """The DeepSpeed releases the rule's premise holds for (on others it stays silent)."""
    return rule.deepspeed_versions or "every release"


def rule_data(rule: type[Rule]) -> dict[str, object]:
    docs = rule.docs
    return {
        "code": rule.code,
        "slug": rule.slug,
        "family": rule.family(),
        "severity": rule.severity.value,
        "fixable": rule.fixable,
        "lifecycle": lifecycle(rule.code),
        "redirected_from": [r.old for r in REDIRECTS.values() if rule.code in r.to and r.old != rule.code],
        "message": rule.message,
        "deepspeed_versions": deepspeed_versions(rule),
        "docs": {
            "what": textwrap.dedent(docs.what).strip(),
            "why": textwrap.dedent(docs.why).strip(),
            "example": textwrap.dedent(docs.example).strip(),
            "use_instead": textwrap.dedent(docs.use_instead).strip(),
            "fix_safety": textwrap.dedent(docs.fix_safety).strip(),
        },
    }


@click.command()
@click.option(
    "--output-format",
    "--format",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    help="Output format (`--format` is an alias).",
)
def rules(output: str) -> None:
    """List every rule."""
    if output == "json":
        click.echo(json.dumps([rule_data(rule) for rule in all_rules()], indent=2))
        return
    width = max(len(rule.slug) for rule in all_rules())
    click.echo(f"{'CODE':<7} {'NAME':<{width}} {'SEVERITY':<8} {'LIFECYCLE':<10} FIX")
    for rule in all_rules():
        fix = "yes" if rule.fixable else ""
        stage = lifecycle(rule.code)
        click.echo(f"{rule.code:<7} {rule.slug:<{width}} {rule.severity.value:<8} {stage:<10} {fix}".rstrip())
    click.echo("")
    for redirect in REDIRECTS.values():  # ruff's remapped codes: still accepted in settings and noqa comments
        click.echo(f"{redirect.old:<7} redirected to {', '.join(redirect.to)}: {redirect.why}")


def _find(code: str) -> type[Rule] | None:
    wanted = code.strip()
    return rule_by_code(wanted.upper()) or next((r for r in all_rules() if r.slug == wanted.lower()), None)


@click.command()
@click.argument("code")
@click.option(
    "--output-format",
    "--format",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    help="Output format (`--format` is an alias).",
)
def explain(code: str, output: str) -> None:
    """Show the documentation of one rule (by code or slug)."""
    rule = _find(code)
    if rule is None:
        raise click.BadParameter(f"no rule {code!r}; `dslint rules` lists them", param_hint="CODE")
    if output == "json":
        click.echo(json.dumps(rule_data(rule), indent=2))
        return
    click.echo(rule.docs.render(rule.code, rule.slug))
    click.echo(
        f"## DeepSpeed versions\nApplies to: DeepSpeed {deepspeed_versions(rule)}. The project's DeepSpeed is "
        "`[tool.dslint] deepspeed-version`, else its own pin (`dslint settings` shows which).\n"
    )
