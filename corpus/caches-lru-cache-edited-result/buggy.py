"""An lru_cache'd helper returns a list; one caller edits it, and every later call gets the edit."""

import functools


@functools.lru_cache
def packages_with_changed_specs():
    """The packages whose version specifiers changed (a git diff of pyproject.toml in the report)."""
    return ["numpy", "pandas", "scikit-learn"]


def packages_to_test(skip):
    changed = packages_with_changed_specs()
    for name in skip:
        if name in changed:
            changed.remove(name)  # edits the list the cache keeps
    return changed


print("first run:", packages_to_test(skip=["pandas"]))
second = packages_to_test(skip=[])
print("second run:", second)
assert "pandas" not in second, "the bug did not reproduce"
