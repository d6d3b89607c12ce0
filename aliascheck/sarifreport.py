"""SARIF 2.1.0: one rule per finding kind, one result per bug, for code scanning.

``partialFingerprints`` carries :attr:`aliascheck.bugs.Bug.id`, which is the
same across runs, machines and checkouts, so code scanning keeps one alert per
bug. Locations are given only for files in the checkout (relative paths).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import __version__
from .bugs import Bug, Code, in_checkout, seen_by
from .kinds import KINDS, kind_of

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT = "aliascheckBug/v1"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def sarif(bugs: Sequence[Bug], fallback: Callable[[Bug], Code | None] = lambda bug: None) -> dict[str, Any]:
    slugs = list(KINDS) + sorted({b.kind for b in bugs} - set(KINDS))
    index = {slug: i for i, slug in enumerate(slugs)}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "aliascheck",
                "version": __version__,
                "rules": [_rule(slug) for slug in slugs],
            }},
            "results": [_result(bug, index[bug.kind], fallback) for bug in bugs],
        }],
    }


def _rule(slug: str) -> dict[str, Any]:
    kind = kind_of(slug)
    return {
        "id": slug,
        "name": "".join(word.capitalize() for word in slug.split("-")),
        "shortDescription": {"text": kind.title},
        "fullDescription": {"text": kind.help},
        "help": {"text": f"{kind.help}\n\nFix: {kind.hint}" if kind.hint else kind.help},
        "defaultConfiguration": {"level": LEVELS.get(kind.severity, "note")},
    }


def _result(bug: Bug, rule_index: int, fallback: Callable[[Bug], Code | None]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": bug.kind,
        "ruleIndex": rule_index,
        "level": LEVELS.get(bug.severity, "note"),
        "message": {"text": f"{bug.gist}\nChange: {bug.change}\nFix: {bug.fix}"},
        "partialFingerprints": {FINGERPRINT: bug.id},
        "properties": {
            "owner": bug.owner,
            "shares": bug.first.shares,
            "seenBy": seen_by(bug),
            "occurrences": len(bug.occurrences),
            "instances": bug.instances,
            "tests": bug.tests,
        },
    }
    code = in_checkout(bug.location) or fallback(bug)
    if code is not None:
        location: dict[str, Any] = {"artifactLocation": {"uri": code.file.replace("\\", "/"), "uriBaseId": "%SRCROOT%"}}
        if code.line > 0:
            location["region"] = {"startLine": code.line}
        result["locations"] = [{"physicalLocation": location}]
    return result
