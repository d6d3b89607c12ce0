pytest_plugins = "pytester"
