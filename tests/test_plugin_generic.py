"""The generic Stateful adapter, named by ini."""

from __future__ import annotations

import pytest
from aliascheck.plugins.generic import resolve

from aliascheck.errors import UsageError

STATEFUL = """
class Cache:
    def __init__(self):
        self.state = {"hits": 0}

    def hit(self):
        self.state["hits"] += 1

    def state_dict(self):
        return self.state if not self.copying else dict(self.state)

    def load_state_dict(self, sd):
        self.state = dict(sd)

    copying = False


class Copying(Cache):
    copying = True
"""

TESTS = """
from mycache import Cache, Copying


def test_kept_and_reloaded():
    c = Cache()
    saved = c.state_dict()
    c.hit()
    Cache().load_state_dict(saved)


def test_copying_is_clean():
    c = Copying()
    saved = c.state_dict()
    c.hit()
    Copying().load_state_dict(saved)
"""


def test_named_classes_are_checked(pytester):
    pytester.makepyfile(mycache=STATEFUL, test_cache=TESTS)
    pytester.makeini("[pytest]\naliascheck_stateful =\n    mycache:Cache\n")
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*owner:    mycache.Cache (Cache#1)",
        "*change:   [[]'hits']    0 -> 1",
        "*seen by:  re-entry (reset/load_state_dict) (*)",
    ])


def test_a_bad_class_name_is_one_clear_usage_error(pytester):
    pytester.makeini("[pytest]\naliascheck_stateful =\n    nosuchmodule:Thing\n")
    result = pytester.runpytest("--aliascheck")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*aliascheck_stateful: cannot import 'nosuchmodule'*"])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no-colon", "not of the form"),
        ("json:NoSuch", "has no 'NoSuch'"),
        ("json:dumps", "is not a class"),
        ("json:JSONDecoder", "neither state_dict"),
    ],
)
def test_resolve_names_what_is_wrong(spec, message):
    with pytest.raises(UsageError, match=message):
        resolve(spec)


ADOPTED = """
import copy


class Results:
    __slots__ = ("toks",)  # no __weakref__: the original's death cannot be watched

    def __init__(self, toks):
        self.toks = toks

    def __getstate__(self):
        return {"toks": self.toks}  # the live list itself

    def __setstate__(self, state):
        self.toks = state["toks"]


def parse():
    memo = {0: Results(["a"])}
    prev = memo.pop(0)
    out = copy.copy(prev)  # pyparsing's Forward.parseImpl: the memo's entry is let go at once
    del prev
    return out


def test_the_copy_alone_holds_what_it_adopted():
    out = parse()
    out.toks.append("b")
    assert out.toks == ["a", "b"]


def test_the_original_still_shares_it():
    first = Results(["a"])
    second = copy.copy(first)
    second.toks.append("b")
    assert first.toks == ["a", "b"]
"""


def test_a_state_adopted_by_a_copy_is_judged_only_while_another_holds_it(pytester):
    """``copy.copy`` through ``__getstate__``/``__setstate__`` hands the original's live list to the copy.
    While the original still holds it, the copy's append changes the original: a finding. When the
    original was let go at once (pyparsing's left-recursion memo returns ``copy.copy(prev_result)``),
    the list is the copy's alone: its append is its own (pyparsing's suite: 17 tests failed only under
    --aliascheck)."""
    pytester.makepyfile(test_adopted=ADOPTED)
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_adopted.py::test_the_original_still_shares_it*"])
