pytest_plugins = "pytester"

# Fixture packages (tests/data/sweep_pkg holds a test module the sweep must skip) are data, not tests.
collect_ignore = ["data"]
