"""aliascheck.sites: a capture is raw (code objects and instruction offsets), rendered only when reported."""

from __future__ import annotations

import gc
import importlib
import inspect
import sys
import weakref

import aliascheck.sites as sites


def _here() -> sites.Where:
    return sites.capture(1)  # this line is the site


def test_a_capture_holds_no_text_until_asked_and_names_the_right_line() -> None:
    where = _here()
    assert where._text is None  # nothing formatted at the handover
    line = inspect.getsourcelines(_here)[1] + 1
    site, stack = where.text()
    assert site.endswith(f"test_sites.py:{line}")
    assert stack[0].endswith(f"test_sites.py:{line} in _here")
    assert where.text() is where.text()  # built once


def test_a_frame_of_exec_d_code_renders_after_its_namespace_is_gone() -> None:
    namespace: dict = {"capture": sites.capture}
    exec(compile("def f():\n    return capture(1)\nw = f()\n", "<string>", "exec"), namespace)
    where = namespace["w"]
    code = weakref.ref(namespace["f"].__code__)
    namespace.clear()
    gc.collect()
    assert code() is not None  # the capture keeps its code objects: nothing to be freed before the report
    assert where.site == "<string>:2"
    assert where.stack[0] == "<string>:2 in f"


def test_a_frame_of_a_deleted_module_renders_from_its_code(tmp_path, monkeypatch) -> None:
    path = tmp_path / "gone_module.py"
    path.write_text("import aliascheck.sites as sites\n\n\ndef handover():\n    return sites.capture(1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    where = importlib.import_module("gone_module").handover()
    del sys.modules["gone_module"]
    path.unlink()
    gc.collect()
    assert where.site.endswith("gone_module.py:5")
    assert where.stack[0].endswith("gone_module.py:5 in handover")


def test_a_frame_with_no_file_or_line_table_renders_as_unknown() -> None:
    where = sites.Where(((object(), 4),))  # not a code object at all: no co_filename, no co_lines
    assert where.site == "<unknown>:0"
    assert where.stack == ("<unknown>:0 in ?",)
    assert sites.Where(()).text() == ("<unknown>", ())
