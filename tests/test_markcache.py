"""Marked code is cached per source (aliascheck.markcache), and the cache is never a way in.

The end-to-end tests run a project twice through ``pytester`` with its own cache directory: the
second run reads every marked module from the cache and gives the same verdicts, and a plain run
afterwards never meets marked code.
"""

from __future__ import annotations

import ast
import os
import textwrap
import types
from pathlib import Path

import pytest

from aliascheck import markcache
from aliascheck.boundary import rewrite


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("ALIASCHECK_CACHE_DIR", str(where))
    monkeypatch.setattr(markcache, "_directory", [])
    return where


def code(text: str = "x = 1\n") -> types.CodeType:
    return compile(text, "m.py", "exec")


def test_an_entry_reads_back_as_the_code_stored(cache: Path) -> None:
    entry = markcache.key("module", "/p/m.py", b"x = 1\n")
    assert markcache.load(entry) is None
    markcache.store(entry, code())
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    loaded = markcache.load(entry)
    assert loaded is not None and loaded.co_consts == code().co_consts
    assert oct((cache / entry.hex()).stat().st_mode & 0o777) == "0o600"


def test_the_key_is_everything_the_code_was_made_from(cache: Path) -> None:
    base = markcache.key("module", "/p/m.py", b"x = 1\n")
    others = [markcache.key("module", "/p/n.py", b"x = 1\n"), markcache.key("module", "/p/m.py", b"x = 2\n"),
              markcache.key("test", "/p/m.py", b"x = 1\n"), markcache.key("test", "/p/m.py", b"x = 1\n", "8.0")]
    assert len({base, *others}) == 5
    assert markcache.key("module", "/p/m.py", b"x = 1\n") == base


@pytest.mark.parametrize("damage", ["truncated", "foreign", "not code", "group-writable", "a link"])
def test_an_entry_not_to_be_trusted_is_ignored_never_run(cache: Path, damage: str) -> None:
    entry = markcache.key("module", "/p/m.py", b"x = 1\n")
    markcache.store(entry, code())
    path = cache / entry.hex()
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2 + 40])
    elif damage == "foreign":  # another key's header: a renamed or planted file
        path.write_bytes(data.replace(entry, markcache.key("module", "/p/other.py", b"")))
    elif damage == "not code":
        import marshal

        path.write_bytes(data[: len(data) - len(marshal.dumps(code()))] + marshal.dumps(["not", "code"]))
    elif damage == "group-writable":
        path.chmod(0o666)
    else:
        target = cache.parent / "elsewhere"
        target.write_bytes(data)
        path.unlink()
        path.symlink_to(target)
    assert markcache.load(entry) is None


def test_a_directory_others_can_write_is_not_used(cache: Path) -> None:
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    assert markcache.directory() is None
    entry = markcache.key("module", "/p/m.py", b"x = 1\n")
    markcache.store(entry, code())
    assert list(cache.iterdir()) == []


def test_off_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALIASCHECK_CACHE_DIR", "off")
    monkeypatch.setattr(markcache, "_directory", [])
    assert markcache.directory() is None


def test_a_module_s_site_numbers_are_fixed_by_its_path_and_source() -> None:
    source = "def f(d, k, v):\n    d[k] = v\n"
    first = ast.unparse(rewrite.mark(ast.parse(source), rewrite.module_base("/p/m.py", source)))
    again = ast.unparse(rewrite.mark(ast.parse(source), rewrite.module_base("/p/m.py", source)))
    moved = ast.unparse(rewrite.mark(ast.parse(source), rewrite.module_base("/q/m.py", source)))
    assert first == again and first != moved
    assert "@aliascheck.register(" in first  # the module registers its sites' texts when it runs


PROJECT = {
    "env/lib/site-packages/rowlib.py": """
        def rows(n, size=3):
            buf = [0] * size  # a library's one buffer, refilled for every item
            for i in range(n):
                for j in range(size):
                    buf[j] = i
                yield buf
    """,
    "src/shop/__init__.py": "",
    "src/shop/model.py": """
        import rowlib

        def collect(n):
            out = []
            for row in rowlib.rows(n):
                out.append(row)  # keeps the library's live buffer n times
            return out

        def collect_copies(n):
            out = []
            for row in rowlib.rows(n):
                out.append(list(row))
            return out
    """,
    "tests/test_shop.py": """
        from shop.model import collect, collect_copies

        def test_kept_live():
            assert len(collect(3)) == 3

        def test_kept_copies():
            assert collect_copies(3) == [[0, 0, 0], [1, 1, 1], [2, 2, 2]]
    """,
}


def _project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in PROJECT.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    pytester.makeini("[pytest]\npythonpath = src\n")
    monkeypatch.setenv("PYTHONPATH", str(pytester.path / "env" / "lib" / "site-packages"))


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, list[str]]:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", *args)
    lines = sorted(ln for ln in result.outlines if ln.startswith(("PASSED", "FAILED", "ERROR")))
    return result, lines


def test_a_second_run_reads_marked_code_from_the_cache_and_judges_the_same(
        pytester: pytest.Pytester, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(pytester, monkeypatch)
    cold, cold_lines = _run(pytester, "--aliascheck")
    entries = sorted(p.name for p in cache.iterdir())
    assert len(entries) == 3  # the package, its module and the test module
    stamps = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    warm, warm_lines = _run(pytester, "--aliascheck")
    assert warm_lines == cold_lines
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == stamps  # read, not written again
    assert warm.ret == cold.ret != 0
    assert any("test_kept_live" in ln and ln.startswith("FAILED") for ln in warm_lines)
    assert any("test_kept_copies" in ln and ln.startswith("PASSED") for ln in warm_lines)


def test_a_plain_run_never_meets_marked_code(pytester: pytest.Pytester, cache: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _project(pytester, monkeypatch)
    _run(pytester, "--aliascheck")
    for pyc in pytester.path.rglob("*.pyc"):  # the interpreter's and pytest's own compiled files
        assert b"@aliascheck" not in pyc.read_bytes(), pyc
    plain, lines = _run(pytester, "-p", "no:aliascheck")
    assert plain.ret == 0 and all(ln.startswith("PASSED") for ln in lines)
    for pyc in pytester.path.rglob("*.pyc"):
        assert b"@aliascheck" not in pyc.read_bytes(), pyc


def test_an_edited_module_is_marked_again(pytester: pytest.Pytester, cache: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _project(pytester, monkeypatch)
    _run(pytester, "--aliascheck")
    model = pytester.path / "src" / "shop" / "model.py"
    model.write_text(model.read_text().replace("out.append(row)  #", "out.append(list(row))  #"))
    os.utime(model)
    result, lines = _run(pytester, "--aliascheck")
    assert len(list(cache.iterdir())) == 4  # the edited module's new entry beside the old one
    assert result.ret == 0 and all(ln.startswith("PASSED") for ln in lines)
