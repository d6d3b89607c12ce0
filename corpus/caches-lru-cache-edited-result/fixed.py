"""The cached helper returns a tuple, and each caller builds its own list from it."""

import functools


@functools.lru_cache
def packages_with_changed_specs():
    """The packages whose version specifiers changed (a git diff of pyproject.toml in the report)."""
    return ("numpy", "pandas", "scikit-learn")


def packages_to_test(skip):
    changed = list(packages_with_changed_specs())
    for name in skip:
        if name in changed:
            changed.remove(name)
    return changed


print("first run:", packages_to_test(skip=["pandas"]))
second = packages_to_test(skip=[])
print("second run:", second)
assert second == ["numpy", "pandas", "scikit-learn"]
