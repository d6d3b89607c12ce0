"""A test module: the sweep never imports it."""

raise RuntimeError("the sweep imported a test module")
