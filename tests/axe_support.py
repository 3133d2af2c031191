"""axe-core in the browser tests: where it is, how it runs, which of its findings fail a test.

A test fails on a serious or critical violation. axe gives each rule one impact, so the rules
whose findings are only ever minor or moderate are switched off before the run rather than
dropped after it: alone on this machine, the English pass of tests/site/test_axe_pages.py took
42 s with every rule and 30 s without those. Only the violations are reported in full: the
passes would cost as much again."""

from __future__ import annotations

from typing import Any

from tests.conftest import ROOT

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
FAILING = ("serious", "critical")

# The options of axe.run, made in the page from axe's own rule table (`axe._audit.rules`, each
# with its impact); without that table every rule runs, which costs time but hides nothing.
OPTIONS_JS = """(() => {
    const rules = (window.axe && axe._audit && axe._audit.rules) || [];
    const quiet = rules.filter(r => r.impact === 'minor' || r.impact === 'moderate');
    const off = Object.fromEntries(quiet.map(r => [r.id, {enabled: false}]));
    return {resultTypes: ['violations'], rules: off};
})()"""


def serious(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The serious and critical violations of an axe result, each with three of its nodes."""
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:3]}
        for v in result["violations"]
        if v["impact"] in FAILING
    ]


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """Serious and critical axe-core violations of the page open in `page`."""
    page.add_script_tag(path=str(AXE))
    return serious(page.evaluate(f"async () => await axe.run(document, {OPTIONS_JS})"))
