"""The boundary: live objects the project keeps from libraries, and its values that libraries keep.

No state protocol is involved; the project's own code is marked at import, as pytest rewrites
asserts (pytest keeps that in ``_pytest/assertion/``). Three parts, each importable alone:

- :mod:`aliascheck.boundary.rewrite`: the AST pass. A table of statement shapes and what each
  inserts (README "What is marked", docs/watched.md); it imports nothing of the runtime.
- :mod:`aliascheck.boundary.runtime`: what the marked statements call, reached through one builtins
  name (:data:`aliascheck.boundary.rewrite.RUNTIME`), never through a module's globals. A test's
  facts live in one per-test state object (``runtime._Test``), made afresh at each test's start.
- :mod:`aliascheck.boundary.rules`: the judge rules *Kept*, *Handed* and *Copied*, decided on the
  facts the runtime's state answers.
"""
