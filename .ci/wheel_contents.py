"""Run by the wheel's own interpreter (.ci/wheel_smoke.sh): is everything the checkout ships installed?

Every module of aliascheck/ and plugins/ (as aliascheck.plugins), the startup hook
aliascheck-child.pth at the top of site-packages, the two entry points, the compiled gate
(aliascheck._gate, built with the wheel), and ``import aliascheck`` finding this copy. It
checks files, so it needs none of the extras installed; it prints what is missing and exits 1.
Usage: python wheel_contents.py CHECKOUT
"""

from __future__ import annotations

import sys
import sysconfig
from importlib.metadata import distribution
from pathlib import Path

ENTRY_POINTS = (("pytest11", "aliascheck", "aliascheck.pytest_plugin"),
                ("console_scripts", "aliascheck", "aliascheck.cli:main"))


def expected_files(checkout: Path) -> set[str]:
    files = {"aliascheck-child.pth", "aliascheck/py.typed"}
    for source, installed in (("aliascheck", "aliascheck"), ("plugins", "aliascheck/plugins")):
        files.update(f"{installed}/{p.relative_to(checkout / source).as_posix()}"
                     for p in (checkout / source).rglob("*.py"))
    return files


def main(checkout: Path) -> int:
    site = Path(sysconfig.get_paths()["purelib"])
    files = expected_files(checkout)
    missing = sorted(p for p in files if not (site / p).is_file())
    found = {(ep.group, ep.name, ep.value) for ep in distribution("aliascheck").entry_points}
    missing += ["entry point [{}] {} = {}".format(*ep) for ep in ENTRY_POINTS if ep not in found]
    import aliascheck

    if not Path(aliascheck.__file__).resolve().is_relative_to(site.resolve()):
        missing.append(f"import aliascheck finds {aliascheck.__file__}, not the copy in {site}")
    import aliascheck.gate

    if not aliascheck.gate.COMPILED:
        missing.append("the compiled gate aliascheck._gate (the wheel was built without it)")
    for line in missing:
        print(f"wheel_contents: missing: {line}")
    print(f"wheel_contents: {len(files)} files, {len(ENTRY_POINTS)} entry points: "
          f"{'all there' if not missing else f'{len(missing)} missing'} ({site})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
