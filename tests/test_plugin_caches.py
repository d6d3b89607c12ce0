"""The caches adapter: values handed out by lru_cache/cache/cached_property, and shallow copies.

Each shape is written as a user would (a module of their own, imported by the test
module before the session's adapters are installed), with no ini options.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from json import dumps as json_dumps

import pytest

ARGS = ("--aliascheck", "-p", "no:cacheprovider")

CONFIG = """
import functools


@functools.lru_cache(maxsize=32)
def load_config(path):
    return {"path": path, "debug": False, "plugins": ["core"]}


@functools.cache
def defaults():
    return {"retries": 3, "hosts": ["a", "b"]}


@functools.lru_cache(None)
def registry():
    return {}


@functools.cache
def handlers():
    return {"start": [], "stop": []}


def register(name, fn):
    registry()[name] = fn
"""


def test_an_lru_cache_value_edited_by_a_caller_names_the_cache_and_the_key(pytester):
    pytester.makepyfile(settings=CONFIG, test_it="""
        from settings import load_config

        def test_debug_mode():
            cfg = load_config("a.json")
            cfg["debug"] = True
            assert cfg["debug"]

        def test_plain_reads():
            assert load_config("b.json")["debug"] is False
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*aliascheck [[]mutation]: settings.load_config (lru_cache) handed out load_config('a.json') at "
        "test_it.py:4; it was edited afterwards: [[]'debug']: False -> True",
        "*let out:  settings.py:6 in settings.load_config",
        "*seen by:  teardown (or the instance's death): the cached value against what was handed out (1)",
        "*fix:      test_it.py:4: copy the cached value before editing it (copy.deepcopy), or return an immutable "
        "value from load_config() (settings.py:6)",
    ])


def test_the_next_call_of_the_cache_sees_the_edit(pytester):
    pytester.makepyfile(settings=CONFIG, test_it="""
        from settings import defaults

        def test_two_callers():
            mine = defaults()
            mine["hosts"].append("c")
            assert defaults()["hosts"] == ["a", "b", "c"]
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*settings.defaults (cache) handed out defaults() at test_it.py:4; it was edited afterwards: "
        "[[]'hosts']: list grew from 2 to 3 items*",
        "*seen by:  a later call of the cache, handing the value out again (1)",
    ])


def test_the_edit_is_blamed_on_the_last_hand_out_whatever_line_hit_before(pytester):
    """Hits from one line keep that line's capture (a loop pays no capture per hit); a hit from
    another line is the hand-out the next edit follows."""
    pytester.makepyfile(settings=CONFIG, test_it="""
        from settings import defaults

        def test_lines():
            for _ in range(3):
                defaults()
            mine = defaults()
            mine["hosts"].append("c")
            for _ in range(2):
                defaults()
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*settings.defaults (cache) handed out defaults() at test_it.py:6; it was edited afterwards: "
        "[[]'hosts']: list grew from 2 to 3 items*",
    ])


def test_copying_the_cached_value_before_editing_it_is_clean(pytester):
    pytester.makepyfile(settings=CONFIG, test_it="""
        import copy
        from settings import defaults, load_config

        def test_copies():
            cfg = copy.deepcopy(load_config("a.json"))
            cfg["debug"] = True
            hosts = list(defaults()["hosts"])
            hosts.append("c")
            assert defaults()["hosts"] == ["a", "b"]
    """)
    pytester.runpytest(*ARGS).assert_outcomes(passed=1)


def test_a_cached_empty_container_is_a_store_not_a_result(pytester):
    pytester.makepyfile(settings=CONFIG, test_it="""
        from settings import handlers, register, registry

        def test_first():
            register("a", print)
            handlers()["start"].append(print)

        def test_second():
            register("b", print)
            handlers()["stop"].append(print)
            assert set(registry()) == {"a", "b"}
    """)
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)


def test_a_zero_argument_cache_of_one_instance_is_the_processs_object(pytester):
    """``@lru_cache def get_settings(): return Settings()`` (FastAPI's idiom): the one settings object,
    configured in place on purpose. The same edit of an instance a keyed cache made, and of a list a
    zero-argument cache returns (the corpus's sktime#6451), are findings."""
    pytester.makepyfile(app="""
        import dataclasses
        import functools

        @dataclasses.dataclass
        class Settings:
            debug: bool = False

        @functools.lru_cache
        def get_settings():
            return Settings()

        @functools.lru_cache
        def settings_for(env):
            return Settings()

        @functools.cache
        def changed_packages():
            return ["numpy", "pandas"]
    """, test_it="""
        from app import changed_packages, get_settings, settings_for

        def test_singleton_configured():
            get_settings().debug = True
            assert get_settings().debug

        def test_keyed_instance_edited():
            settings_for("prod").debug = True
            assert settings_for("prod").debug

        def test_zero_argument_list_edited():
            changed_packages().remove("pandas")
            assert changed_packages() == ["numpy"]
    """)
    result = pytester.runpytest(*ARGS, "-rA")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["PASSED test_it.py::test_singleton_configured*"])


def test_a_cached_collection_of_objects_is_judged_by_which_objects_it_holds(pytester):
    """A cache of references (executing's ``statements_at_line``: a set of AST nodes it annotates later)
    hands out the objects themselves: an object that owns its state changing inside a cached set is its
    own working, not an edit of the cached value; the set gaining or losing one is (buggy twin)."""
    pytester.makepyfile(nodes="""
        import functools

        class Node:
            def __init__(self, line):
                self.line, self.parent = line, None

        TREE = [Node(1), Node(1), Node(2)]

        @functools.lru_cache(maxsize=None)
        def at_line(line):
            return {node for node in TREE if node.line == line}

        def annotate():
            for node in TREE:
                node.parent = TREE  # filled in later, as executing marks its nodes
    """, test_it="""
        from nodes import annotate, at_line

        def test_annotated_after_the_lookup():
            assert len(at_line(1)) == 2
            annotate()
            assert len(at_line(1)) == 2

        def test_the_cached_set_edited():
            found = at_line(2)
            found.clear()
            assert not at_line(2)
    """)
    result = pytester.runpytest(*ARGS, "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_it.py::test_the_cached_set_edited*"])


def test_a_cached_value_overridden_by_monkeypatch_is_the_tests_override(pytester):
    """FastAPI's settings pattern: ``monkeypatch.setattr(get_settings(), "debug", True)`` (or ``setitem``)
    overrides a cached value for one test, and pytest undoes it at the test's teardown: the harness's
    override, not a caller's edit. The same write made by the test itself into the dict a cache hands
    every caller is a finding (buggy twin; the settings instance a zero-argument cache made is the
    process's one object, configured in place)."""
    pytester.makepyfile(config="""
        import dataclasses
        import functools

        @dataclasses.dataclass
        class Settings:
            debug: bool = False

        @functools.lru_cache
        def get_settings():
            return Settings()

        @functools.cache
        def limits():
            return {"rate": 10, "burst": 20}
    """, test_it="""
        from config import get_settings, limits

        def test_debug_overridden(monkeypatch):
            monkeypatch.setattr(get_settings(), "debug", True)
            assert get_settings().debug

        def test_rate_overridden(monkeypatch):
            monkeypatch.setitem(limits(), "rate", 1)
            assert limits()["rate"] == 1

        def test_rate_set_by_the_test():
            limits()["rate"] = 1
            assert limits()["rate"] == 1
            limits()["rate"] = 10
    """)
    result = pytester.runpytest(*ARGS, "-rA", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_it.py::test_rate_set_by_the_test*"])


def test_caches_made_inside_the_test_are_watched(pytester):
    pytester.makepyfile(test_it="""
        from functools import lru_cache

        def test_local_cache():
            @lru_cache
            def table(n):
                return list(range(n))

            rows = table(3)
            rows.sort(reverse=True)
            assert table(3) == [2, 1, 0]
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_local_cache.<locals>.table (lru_cache) handed out table(3)*"])


def test_a_cache_keeps_its_api_and_metadata(pytester):
    pytester.makepyfile(test_it="""
        import functools

        def test_api():
            @functools.lru_cache(maxsize=2, typed=True)
            def square(x):
                "Squares."
                return [x * x]

            assert square(2) == [4] and square(2) is square(2)
            assert square.cache_info().hits == 2 and square.cache_info().misses == 1
            assert square.cache_parameters() == {"maxsize": 2, "typed": True}
            assert square.__name__ == "square" and square.__doc__ == "Squares."
            assert square.__wrapped__(3) == [9]
            square.cache_clear()
            assert square.cache_info().currsize == 0

            class Box:
                @functools.lru_cache
                def items(self):
                    return [1]

            box = Box()
            assert box.items() is box.items()
            with pytest.raises(TypeError):
                functools.lru_cache(maxsize="x")
            with pytest.raises(ValueError, match="boom"):
                functools.cache(lambda: (_ for _ in ()).throw(ValueError("boom")))()

        import pytest
    """)
    pytester.runpytest(*ARGS).assert_outcomes(passed=1)


SHAPES = """
import functools


class Report:
    def __init__(self, rows):
        self.rows = rows

    @functools.cached_property
    def totals(self):
        return {"rows": len(self.rows), "sum": sum(self.rows)}

    @functools.cached_property
    def _memo(self):
        return {}

    @functools.cached_property
    def seen(self):
        return set(self.rows)

    def lookup(self, key):
        if key not in self._memo:
            self._memo[key] = key * 2
        return self._memo[key]

    def add(self, row):
        self.rows.append(row)
        self.seen.add(row)


class Slotted:
    __slots__ = ("x",)

    @functools.cached_property
    def value(self):
        return [1]
"""


def test_a_cached_property_value_edited_by_a_caller_is_a_finding(pytester):
    pytester.makepyfile(shapes=SHAPES, test_it="""
        from shapes import Report

        KEPT = Report([1, 2, 3])

        def test_totals():
            totals = KEPT.totals
            totals["sum"] = 0
            assert KEPT.totals["sum"] == 0
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*shapes.Report.totals (cached_property) handed out Report#1.totals at test_it.py:6; it was edited "
        "afterwards: [[]'sum']: 6 -> 0",
        "*let out:  shapes.py:10 in shapes.Report.totals",
    ])


def test_a_cached_property_is_judged_when_its_instance_dies(pytester):
    pytester.makepyfile(shapes=SHAPES, test_it="""
        from shapes import Report

        def test_local_instance():
            report = Report([1, 2])
            report.totals["rows"] += 1
            del report
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*it was edited afterwards: [[]'rows']: 2 -> 3"])


def test_cached_property_memos_and_maintained_values_are_clean(pytester):
    pytester.makepyfile(shapes=SHAPES, test_it="""
        import functools
        import pytest
        from shapes import Report, Slotted

        KEPT = Report([1, 2, 3])

        def test_memo_and_maintained():
            assert KEPT.lookup(2) == 4 and KEPT.lookup(5) == 10
            KEPT.add(7)
            assert 7 in KEPT.seen

        def test_rebinding_by_the_caller():
            KEPT.totals  # computed and handed out
            KEPT.totals = {"rows": 0}  # a new value assigned: no edit of what was handed out
            KEPT.totals["rows"] = 5

        def test_descriptor_behaviour():
            assert isinstance(Report.__dict__["totals"], functools.cached_property)
            assert Report.totals is Report.__dict__["totals"]
            with pytest.raises(TypeError, match="No '__dict__' attribute"):
                Slotted().value
    """)
    pytester.runpytest(*ARGS).assert_outcomes(passed=3)


def test_a_cached_property_that_never_reads_its_instance_is_a_lazily_created_attribute(pytester):
    """``@cached_property def stats(self): return {"n": 0}``: the instance's own attribute, created at
    first use (as ``__init__`` would have), edited by whoever holds the instance. A value derived from
    the instance (``Report.totals``) edited by a caller is still a finding."""
    pytester.makepyfile(shapes=SHAPES, emitter="""
        from functools import cached_property

        class Emitter:
            @cached_property
            def listeners(self):
                return []

            @cached_property
            def stats(self):
                return {"emitted": 0}
    """, test_it="""
        from emitter import Emitter
        from shapes import Report

        def test_lazily_created_attributes_edited():
            em = Emitter()
            em.listeners.append(print)
            em.stats["emitted"] += 1
            assert em.stats == {"emitted": 1}

        def test_derived_value_edited():
            report = Report([1, 2])
            report.totals["sum"] = 0
            assert report.totals["sum"] == 0
    """)
    result = pytester.runpytest(*ARGS, "-rA", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_it.py::test_derived_value_edited*"])


def test_a_recomputed_cached_property_value_is_judged_afresh(pytester):
    pytester.makepyfile(shapes=SHAPES, test_it="""
        from shapes import Report

        KEPT = Report([1, 2, 3])

        def test_invalidate_then_edit():
            assert KEPT.totals["sum"] == 6
            del KEPT.totals  # invalidated: the next read computes a new value
            KEPT.rows.append(4)
            KEPT.totals["sum"] = 0
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Report#1.totals at test_it.py:9; it was edited afterwards: [[]'sum']: 10 -> 0"])


MODEL = """
import copy
import dataclasses


class Job:
    def __init__(self, name, tags):
        self.name = name
        self.tags = tags
        self.attempts = 0

    def variant(self, tag):
        new = copy.copy(self)
        new.tags.append(tag)
        return new

    def variant_fixed(self, tag):
        new = copy.copy(self)
        new.tags = [*self.tags, tag]
        return new


@dataclasses.dataclass
class Settings:
    name: str
    paths: list = dataclasses.field(default_factory=list)


def with_path(settings, path):
    new = dataclasses.replace(settings)
    new.paths.append(path)
    return new


def with_path_fixed(settings, path):
    return dataclasses.replace(settings, paths=[*settings.paths, path])
"""


def test_a_copy_copy_that_edits_a_shared_list_is_a_finding(pytester):
    pytester.makepyfile(model=MODEL, test_it="""
        from model import Job

        def test_variant():
            job = Job("build", ["ci"])
            nightly = job.variant("nightly")
            assert nightly.tags == ["ci", "nightly"]
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*model.Job (copy.copy) at model.py:12 shares Job.tags with the original; it changed while both were "
        "alive: .tags: list grew from 1 to 2 items (appended 'nightly')",
        "*fix:      model.py:12: give the copy its own tags*",
    ])


def test_dataclasses_replace_sharing_a_field_is_a_finding(pytester):
    pytester.makepyfile(model=MODEL, test_it="""
        from model import Settings, with_path

        BASE = Settings("base", ["/etc"])

        def test_with_path():
            assert with_path(BASE, "/opt").paths == ["/etc", "/opt"]
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*model.Settings (dataclasses.replace) at model.py:29 shares Settings.paths*",
                                 "*seen by:  the death of a shallow copy or of its original (1)"])


def test_copies_that_rebind_or_drop_the_original_are_clean(pytester):
    pytester.makepyfile(model=MODEL, test_it="""
        import copy
        import dataclasses
        from model import Job, Settings, with_path, with_path_fixed

        def test_rebinding():
            job = Job("build", ["ci"])
            nightly = job.variant_fixed("nightly")
            job.tags.append("local")  # the original's own list, no longer shared
            assert nightly.tags == ["ci", "nightly"]

        def test_replacing_and_dropping_the_old_one():
            class Holder:
                cfg = Settings("a", ["/etc"])

            holder = Holder()
            holder.cfg = Settings("a", ["/etc"])
            holder.cfg = dataclasses.replace(holder.cfg, name="b")  # the old one dropped at once
            holder.cfg.paths.append("/opt")
            assert with_path_fixed(holder.cfg, "/srv").paths == ["/etc", "/opt", "/srv"]

        def test_copy_then_counter():
            job = Job("build", ["ci"])
            snapshot = copy.copy(job)
            job.attempts += 1  # an int rebound, nothing shared changed
            assert snapshot.attempts == 0
    """)
    pytester.runpytest(*ARGS).assert_outcomes(passed=3)



def test_a_part_the_classs_own_methods_write_is_shared_by_its_copies_on_purpose(pytester):
    """A client whose ``with_options`` returns ``copy.copy(self)`` with one option changed shares its
    response cache with the copy on purpose: the class's own method writes ``self._cache[key]``. A part
    only ``__init__`` binds (``self.tags = []``) and a caller appends to through the copy is still a finding."""
    pytester.makepyfile(api="""
        import copy

        class Client:
            def __init__(self, base):
                self.base, self.timeout, self._cache = base, 10, {}

            def with_options(self, **kw):
                new = copy.copy(self)
                for k, v in kw.items():
                    setattr(new, k, v)
                return new

            def get(self, path):
                key = self.base + path
                if key not in self._cache:
                    self._cache[key] = f"resp:{key}:{self.timeout}"
                return self._cache[key]

        class Config:
            def __init__(self):
                self.tags = []
    """, test_it="""
        import copy
        from api import Client, Config

        def test_shared_cache():
            c = Client("http://x")
            fast = c.with_options(timeout=1)
            assert fast.get("/a") == c.get("/a")

        def test_tags_appended_through_a_copy():
            base = Config()
            variant = copy.copy(base)
            variant.tags.append("fast")
            assert base.tags == ["fast"]
    """)
    result = pytester.runpytest(*ARGS, "-rA", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_it.py::test_tags_appended_through_a_copy*"])


def test_a_shared_part_a_third_object_holds_is_that_objects(pytester):
    """A copy of an object that keeps a handle to another object's table (glom's UnregisteredTarget holds
    its registry's type map, and glom re-raises a copy.copy of it): the table's owner extending it is
    no write through the copy. The same copy whose part only the two instances hold is still judged."""
    pytester.makepyfile(test_it="""
        import copy

        class View:
            def __init__(self, table):
                self.table = table  # the registry's own dict: a handle

        class Registry:
            def __init__(self):
                self.table = {}

        def test_the_owner_extends_its_table():
            reg = Registry()
            view = View(reg.table)
            twin = copy.copy(view)
            reg.table["k"] = 1
            assert view.table is twin.table is reg.table

        def test_a_part_only_the_two_hold():
            view = View({})
            twin = copy.copy(view)
            twin.table["k"] = 1
            assert view.table == {"k": 1}
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_it.py::test_a_part_only_the_two_hold*"])

def test_a_lazily_initialised_attribute_filled_by_a_read_is_no_change(pytester):
    """A shared part whose objects fill a private attribute at their first read (``self._schema = None``,
    and a ``schema`` property that builds it: marshmallow's ``Nested`` fields, shared by a ``copy.copy`` of
    a schema, fill it as either schema dumps) changed nothing the two share. Its buggy twin, the same
    attribute set to another value once it held one, is still a change."""
    pytester.makepyfile(test_it="""
        import copy

        class Field:
            def __init__(self):
                self._schema = None

            @property
            def schema(self):
                if self._schema is None:
                    self._schema = {"built": True}
                return self._schema

        class Schema:
            def __init__(self):
                self.fields = {"f": Field()}

        def test_a_read_fills_it():
            schema = Schema()
            twin = copy.copy(schema)
            assert twin.fields["f"].schema == {"built": True}
            assert schema.fields is twin.fields

        def test_replaced_once_filled():
            schema = Schema()
            schema.fields["f"].schema
            twin = copy.copy(schema)
            twin.fields["f"]._schema = {"built": False}
            assert schema.fields["f"].schema == {"built": False}
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_it.py::test_replaced_once_filled*"])


def test_a_value_computed_at_first_use_into_a_class_declared_none_is_no_change(pytester):
    """lark's ``PatternRE``: ``_width = None`` in the class body, ``self._width = ...`` at the first
    ``min_width`` read. A ``copy.copy`` of its lexer configuration shares the patterns, and either
    parser filling the width changed nothing the two share (lark's own suite: 179 tests failed only
    under --aliascheck). The twins stay changes: a public attribute the class declares None, filled
    on a shared part, and the private one replaced once it held a value."""
    pytester.makepyfile(test_it="""
        import copy

        class Pattern:
            _width = None
            owner = None

            def __init__(self, text):
                self.text = text

            def _get_width(self):
                if self._width is None:
                    self._width = [len(self.text), len(self.text)]
                return self._width

            @property
            def min_width(self):
                return self._get_width()[0]

        class Token(str):  # lark's terminal names: a str subclass, with its own reduction
            def __new__(cls, kind, value):
                self = super().__new__(cls, value)
                self.kind = kind
                return self

            def __reduce__(self):
                return (Token, (self.kind, str(self)))

        class Conf:
            def __init__(self):
                self.terminals = {Token("TERMINAL", "A"): Pattern("ab")}

        def test_the_width_computed_at_first_use():
            conf = Conf()
            twin = copy.copy(conf)
            assert twin.terminals["A"].min_width == 2
            assert conf.terminals is twin.terminals and type(next(iter(conf.terminals))) is Token

        def test_a_public_attribute_declared_none_set_on_a_shared_part():
            conf = Conf()
            twin = copy.copy(conf)
            twin.terminals["A"].owner = "twin"
            assert conf.terminals["A"].owner == "twin"

        def test_the_width_replaced_once_computed():
            conf = Conf()
            conf.terminals["A"].min_width
            twin = copy.copy(conf)
            twin.terminals["A"]._width = [0, 0]
            assert conf.terminals["A"].min_width == 0
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(passed=1, failed=2)
    assert "FAILED test_it.py::test_the_width_computed_at_first_use" not in result.stdout.str()


def test_library_code_copying_its_own_objects_is_not_judged(pytester):
    lib = pytester.mkdir("site-packages")
    lib.joinpath("vendored.py").write_text(
        "import copy\n\n\nclass Node:\n    def __init__(self):\n        self.children = []\n\n\n"
        "def grow(node):\n    twin = copy.copy(node)\n    twin.children.append(1)\n    return twin\n"
    )
    pytester.makepyfile(test_it="""
        import sys
        sys.path.insert(0, "site-packages")
        import vendored

        def test_library():
            node = vendored.Node()
            twin = vendored.grow(node)
            assert node.children == [1] and twin.children == [1]
    """)
    pytester.runpytest(*ARGS).assert_outcomes(passed=1)


def test_without_the_flag_nothing_is_patched(pytester):
    pytester.makepyfile(test_it="""
        import copy
        import functools

        def test_plain():
            assert type(functools.lru_cache(lambda: 1)).__name__ == "_lru_cache_wrapper"
            assert copy.copy.__module__ == "copy" and not hasattr(copy.copy, "__aliascheck_original__")
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_install_is_undone_with_the_session(pytester):
    pytester.makepyfile(test_it="def test_nothing():\n    pass\n")
    pytester.runpytest(*ARGS).assert_outcomes(passed=1)
    assert not hasattr(copy.copy, "__aliascheck_original__")
    assert not hasattr(dataclasses.replace, "__aliascheck_original__")
    assert not hasattr(functools.lru_cache, "__aliascheck_original__")
    assert functools.cached_property.__module__ == "functools"
    assert not hasattr(functools.cached_property, "__aliascheck_original__")


@pytest.mark.parametrize("value", [None, 3, "x", (1, "a"), frozenset({1})])
def test_immutable_results_are_let_through(value):
    from aliascheck.judge import constant as _atomic

    assert _atomic(value)


class _Codec:  # a service object: owns its state
    def dumps(self, x):
        return str(x)


@dataclasses.dataclass
class _Row:  # plain data
    n: int = 0


@pytest.mark.parametrize(("value", "store"), [({}, True), ([], True), ({"a": [], "b": {}}, True),
                                              ({"a": 1}, False), ([[1]], False),
                                              ({"json": json_dumps}, True), ({"json": _Codec()}, True),
                                              ({"kind": _Codec}, True), ({"json": json_dumps, "n": 1}, False),
                                              ({"row": _Row()}, False)])
def test_a_store_is_empty_or_holds_only_empty_containers(value, store):
    """A registry seeded with functions, classes or service objects, extended by a ``register()``, is a
    store (clean); a seed of data (an atom, a dataclass row) is a result (judged)."""
    from aliascheck.judge import is_store as _store

    assert _store(value) is store


def test_a_large_cached_value_is_checked_at_teardown_not_on_every_hit(pytester):
    pytester.makepyfile(test_it="""
        import functools

        @functools.cache
        def table():
            return list(range(20_000))

        def test_big():
            table().append(-1)
            assert table()[-1] == -1
    """)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*list grew from 20000 to 20001 items*",
                                 "*seen by:  teardown (or the instance's death)*"])


def test_an_attribute_edit_is_told_by_line_numbers_read_the_way_this_python_gives_them():
    """``_edits`` pairs a load of the attribute with a subscript store on the same line; dis gives the
    line as ``starts_line`` before 3.13 and as ``line_number`` from 3.13 on."""
    from aliascheck.judge import edits as _edits

    class Owner:
        def fills(self, key):
            self._memo[key] = 1

        def reads(self, other, key):
            seen = self._memo
            other[key] = seen

    assert _edits(Owner.fills.__code__, "_memo")
    assert not _edits(Owner.reads.__code__, "_memo")
