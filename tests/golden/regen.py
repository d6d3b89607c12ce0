"""Regenerate the golden files: ``python tests/golden/regen.py`` (from the repository root).

1. Runs five real scenarios under a Session, as the corpus runner does, and keeps every
   finding they make in ``findings.json``: the Prefetcher seed, cloudpickle's class reset,
   ``best = model.state_dict()``, an alias that never changed, and an unverifiable part.
2. Renders them as text (``text.txt``; with every occurrence, as ``--aliascheck-verbose``
   shows them, ``text-verbose.txt``), GitHub annotations (``github.txt``) and SARIF
   (``sarif.json``). ``tests/test_golden.py`` renders ``findings.json`` again and
   compares; run this after a deliberate change of the output, and read the diff.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# (file, the stateful classes the generic adapter is told about, steps after the body)
SCENARIOS = [
    ("corpus/torchdata-prefetcher-periodic/buggy.py", (), 0),
    ("corpus/cloudpickle-class-reset/buggy.py", (), 0),
    ("corpus/torch-best-state-dict/buggy.py", (), 0),
    ("tests/golden/src/alias_warning.py", ("__main__:Progress",), 0),
    ("tests/golden/src/unverifiable.py", ("__main__:Cache",), 0),
]


def capture() -> list[dict]:
    import cloudpickle  # noqa: F401  (imported first, so that their adapters install)
    import torch  # noqa: F401
    import torchdata.nodes  # noqa: F401

    from aliascheck.config import Options
    from aliascheck.corpus_child import _watch_script_classes
    from aliascheck.session import Session

    found: list[dict] = []
    for file, stateful, steps in SCENARIOS:
        session = Session(Options(enabled=True, steps=steps))
        session.start()
        try:
            session.begin_test(f"{file}::main")
            session.ledger.owning = True
            undo = _watch_script_classes(stateful)  # classes the script defines, as the corpus runner does
            try:
                runpy.run_path(file, run_name="__main__")
            finally:
                if undo is not None:
                    undo()
            found += [f.to_json() for f in session.end_test(steps)]
        finally:
            session.stop()
    return found


def render(findings: list[dict]) -> dict[str, str]:
    from aliascheck.bugs import group
    from aliascheck.findings import Finding
    from aliascheck.githubreport import lines
    from aliascheck.report import render as text
    from aliascheck.sarifreport import sarif

    occurrences = [Finding.from_json(f) for f in findings]
    shown = [f for f in occurrences if f.severity != "info"]
    bugs = group(occurrences)
    return {
        "text.txt": text(occurrences) + "\n",
        "text-verbose.txt": text(shown, verbose=True) + "\n",
        "github.txt": "\n".join(lines([b for b in bugs if b.severity != "info"])) + "\n",
        "sarif.json": json.dumps(sarif(bugs), indent=2) + "\n",
    }


def main() -> None:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    findings = capture()
    (HERE / "findings.json").write_text(json.dumps(findings, indent=2) + "\n")
    for name, text in render(findings).items():
        (HERE / name).write_text(text)
    print(f"{len(findings)} findings; wrote findings.json, " + ", ".join(render(findings)))


if __name__ == "__main__":
    main()
