"""Run every staged variant plainly (no aliascheck) and validate each entry.toml with the corpus loader.

    .venv/bin/python corpus-staging/check_plain.py

Each buggy.py and fixed.py must exit 0 (its own assert: the bug reproduced, or the fix
holds), and so must every script in precision/. The entries use family = "boundary",
which aliascheck.corpus does not list yet: the loader is run with it added, so every
other field is validated as `aliascheck corpus` will.
"""

import subprocess
import sys
import time
from pathlib import Path

from aliascheck import corpus

HERE = Path(__file__).resolve().parent


def main() -> int:
    if "boundary" not in corpus.FAMILIES:
        corpus.FAMILIES = (*corpus.FAMILIES, "boundary")
    failed = 0
    scripts = []
    for entry_dir in sorted(p.parent for p in HERE.glob("*/entry.toml")):
        entry = corpus.load_entry(entry_dir)
        scripts += [v.file for v in entry.variants.values()]
    scripts += sorted((HERE / "precision").glob("*.py"))
    for script in scripts:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        seconds = time.perf_counter() - start
        ok = done.returncode == 0
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {seconds:5.2f}s {script.relative_to(HERE)}")
        if not ok:
            print(done.stdout + done.stderr)
    print(f"{len(scripts) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
