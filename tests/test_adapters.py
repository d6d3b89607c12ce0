"""Finding adapters: third-party ones by the ``aliascheck.plugins`` entry-point group."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

from aliascheck.adapters import ENTRY_POINT_GROUP, Adapters
from aliascheck.config import Options

ADAPTER = """
from aliascheck.hookspecs import hookimpl

installed = []


@hookimpl
def aliascheck_install(options):
    installed.append(options)
    return lambda: installed.clear()
"""


def distribution(where, name, entry_points_txt):
    info = where / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points_txt)


def test_a_third_party_adapter_is_found_by_its_entry_point_and_installed(tmp_path, monkeypatch):
    (tmp_path / "my_adapter.py").write_text(ADAPTER)
    distribution(tmp_path, "my_adapter", f"[console_scripts]\nmine = my_adapter:main\n\n"
                                         f"[{ENTRY_POINT_GROUP}]\nmine = my_adapter\n")
    distribution(tmp_path, "other_tool", "[console_scripts]\nother = other_tool:main\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    options = Options(enabled=True)
    adapters = Adapters(options)
    assert adapters.plugins == [("mine", "my_adapter")]
    adapters.refresh()
    try:
        assert "mine" in adapters.installed
        assert sys.modules["my_adapter"].installed == [options]
    finally:
        adapters.uninstall()
    assert sys.modules["my_adapter"].installed == []


def test_without_a_third_party_adapter_the_list_is_the_standard_parses(tmp_path, monkeypatch):
    distribution(tmp_path, "other_tool", "[console_scripts]\nother = other_tool:main\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert Adapters(Options(enabled=True)).plugins == [(ep.name, ep.value)
                                                       for ep in entry_points(group=ENTRY_POINT_GROUP)]
