"""Only what pyproject.toml cannot say: the child-process startup hook goes to the top of site-packages,
and the compiled gate is optional.

``aliascheck-child.pth`` (a copy of ``aliascheck/child.pth``) starts a ledger in every Python
child of a checked test run, as coverage.py's ``.pth`` does for subprocess measurement; it
does nothing unless ``ALIASCHECK_CHILD`` is set. A wheel gets it at its root; an editable
install gets it in the editable wheel, next to the ``__editable__`` hook.

``aliascheck._gate`` is the compiled twin of ``aliascheck/gate.py`` (the marked code's per-statement
questions). It is optional, as coverage.py's C tracer is: without a compiler the install still
succeeds and the pure-Python gate answers the same, more slowly.
"""

from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HOOK = Path(__file__).parent / "aliascheck" / "child.pth"
NAME = "aliascheck-child.pth"


class BuildPyWithHook(build_py):
    def run(self) -> None:
        super().run()
        targets = [Path(self.build_lib)]
        if getattr(self, "editable_mode", False):  # build_lib is thrown away: the editable wheel's root
            targets = [Path(self.get_finalized_command("install").install_lib)]
        for target in targets:
            target.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(HOOK), str(target / NAME))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / NAME)]


setup(cmdclass={"build_py": BuildPyWithHook},
      ext_modules=[Extension("aliascheck._gate", ["aliascheck/_gate.c"], optional=True)])
