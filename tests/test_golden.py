"""Rendered findings (text, GitHub annotations, SARIF) of five real bugs, against golden files.

``tests/golden/findings.json`` holds every finding five real scenarios made (the
Prefetcher seed, cloudpickle's class reset, ``best = model.state_dict()``, an alias
that never changed, an unverifiable part); ``python tests/golden/regen.py`` makes it
and the golden outputs again after a deliberate change. The SARIF output is checked
against the SARIF 2.1.0 schema (``tests/data/sarif-schema-2.1.0.json``, OASIS errata 01).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"


def regen():
    spec = importlib.util.spec_from_file_location("golden_regen", GOLDEN / "regen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def rendered(monkeypatch):
    monkeypatch.chdir(ROOT)  # locations are checked against files in the checkout
    return regen().render(json.loads((GOLDEN / "findings.json").read_text()))


@pytest.mark.parametrize("name", ["text.txt", "text-verbose.txt", "github.txt", "sarif.json"])
def test_rendering_matches_the_golden_file(rendered, name):
    expected = (GOLDEN / name).read_text()
    assert rendered[name] == expected, f"run: python tests/golden/regen.py, then read the diff of {name}"


def test_the_golden_input_holds_the_five_bugs_one_block_each(rendered):
    kinds = [line.split("]")[0] for line in rendered["text.txt"].splitlines() if line.startswith("aliascheck [")]
    assert kinds == ["aliascheck [mutation", "aliascheck [class-reset", "aliascheck [mutation", "aliascheck [alias",
                     "aliascheck [unverifiable"]
    assert len(rendered["github.txt"].splitlines()) == 4  # the unverifiable part is a note: no annotation
    # Verbose lists each occurrence under its bug: the seed's two handovers, the two tensors of best.
    assert rendered["text-verbose.txt"].count("\n    - ") == 2 + 1 + 2 + 1


def validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def test_the_golden_sarif_is_valid_sarif_2_1_0(rendered):
    log = json.loads(rendered["sarif.json"])
    errors = sorted(validator().iter_errors(log), key=str)
    assert errors == []
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [
        "mutation", "alias", "class-reset", "unverifiable", "fresh-class", "resume", "kept", "handed", "copied"]
    assert len(run["results"]) == 5  # one per bug, however many occurrences
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert len(result["partialFingerprints"]["aliascheckBug/v1"]) == 16


def test_the_schema_check_can_fail(rendered):
    log = json.loads(rendered["sarif.json"])
    del log["runs"][0]["tool"]["driver"]["name"]
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert len(list(validator().iter_errors(log))) == 2
