"""Each statement shape the rewriter marks, on objects that count and log: the same counts and order."""

from __future__ import annotations

import probelib as p

COPY_LOG = ["items", "set 'a'"]  # copy.copy of a dict subclass: __reduce_ex__ reads items(), the new one is filled


def setup_function() -> None:
    p.clear()


def test_append_reads_property_once() -> None:
    obj = p.Counted()
    assert p.append_prop(obj) == [[1, [2]]]
    assert obj.reads == 1


def test_append_reads_item_once() -> None:
    d = p.LoggingMap(k=[1])
    assert p.append_item(d, "k") == [[1]]
    assert (d.gets, p.LOG) == (1, ["get 'k'"])


def test_append_from_evicting_cache() -> None:
    cache = p.OneShot({"k": [1], "j": [2]})
    assert p.append_oneshot(cache, "k") == [[1]]
    assert "k" not in cache and "j" in cache
    assert cache.misses == 0


def test_append_getattr_miss_once() -> None:
    obj = p.Dynamic()
    assert p.append_missing(obj) == [[[1], [2]]]
    assert obj.misses == ["data"]


def test_append_call_reads_receiver_never() -> None:
    p.CountingList.reads = 0
    out = p.append_call(p.CountingList(), p.Counted())
    assert list.__len__(out) == 1
    assert p.CountingList.reads == 0


def test_setitem_once() -> None:
    d = p.LoggingMap()
    p.set_item(d, "k", [1])
    assert (d.sets, d.gets, d.item_calls, p.LOG) == (1, 0, 0, ["set 'k'"])


def test_setitem_of_property_reads_it_once() -> None:
    d, obj = p.LoggingMap(), p.Counted()
    p.set_item_prop(d, obj)
    assert obj.reads == 1 and p.LOG == ["set 'p'"]


def test_setitem_through_property_reads_it_once() -> None:
    holder = p.Counted()
    p.set_item_through_prop(holder, [1])
    assert holder.child_reads == 1


def test_setattr_through_property_reads_it_once() -> None:
    holder = p.Counted()
    p.set_attr_through_prop(holder, [1])
    assert holder.child_reads == 1 and holder._child is not None and holder._child.p == [1]


def test_augmented_attribute() -> None:
    obj = p.Counted()
    p.augment_attr(obj)
    p.augment_attr(obj)
    assert obj.p == 2


def test_augmented_through_property_reads_it_once() -> None:
    holder = p.Counted()
    p.augment_through_prop(holder)
    assert holder.child_reads == 1


def test_augmented_item_order() -> None:
    d = p.LoggingMap(k=1)
    p.augment_item(d, "k")
    assert p.LOG == ["get 'k'", "set 'k'"] and dict(d) == {"k": 2}


def test_subscript_assignment_evaluation_order() -> None:
    assert p.call_order() == {"k": [1]}
    assert p.LOG == ["h", "f", "g"]


def test_walrus_reads_once() -> None:
    obj = p.Counted()
    out, y = p.walrus(obj)
    assert out == [y] and out[0] is y and obj.reads == 1


def test_starred_target_reads_once() -> None:
    obj = p.Counted([1, 2, 3])
    assert p.starred(obj) == (1, [2, 3])
    assert obj.reads == 1


def test_chained_target() -> None:
    d, obj = p.LoggingMap(), p.Counted()
    a = p.chained(d, obj)
    assert a is dict.__getitem__(d, "c") and obj.reads == 1 and p.LOG == ["set 'c'"]


def test_tuple_target_reads_once() -> None:
    obj = p.Counted()
    assert p.tuple_target(obj) == ([[1]], [[2]])
    assert (obj.reads, obj.child_reads) == (0, 1)


def test_for_loop_over_getattr_object() -> None:
    obj = p.Dynamic()
    assert p.for_over(obj) == [[1], [2], [3]]
    assert obj.misses == []


def test_for_loop_over_project_generator() -> None:
    out = p.for_over_generator()
    assert len(out) == 3 and out[0] is out[1] is out[2] and out[0] == [0, 1, 2]


def test_yield_of_a_buffer() -> None:
    sent: list[object] = []
    out, lines, names = p.yields_a_buffer(sent)
    assert sent == ["a", "b"]
    assert [float(a[0]) for a in out] == [0.0, 0.0, 1.0]
    assert lines == [3, 3, 3]  # suspended at the yield's own line each time
    assert names == ["buf", "i", "np", "sent"]  # its own and its free names: no temporary


def test_a_cached_call_hashes_its_argument_as_written() -> None:
    hashes, got = p.cached_lookups()
    assert got == [3, 3, 3]
    assert hashes == 3  # the cache's own hash per call; nothing else hashes the argument


def test_with_target() -> None:
    assert p.with_target() == ["a"]
    assert p.LOG == ["enter a", "body ['a']", "exit a"]


def test_comprehension_target() -> None:
    assert p.comprehension(p.Counted()) == [1, 2, 3]


def test_bound_call_reads_receiver_once() -> None:
    holder = p.Counted()
    assert p.bind_call(holder) == [[1]]
    assert holder.child_reads == 1


def test_call_argument_read_once() -> None:
    holder = p.Counted()
    assert p.pass_through_prop(holder) == "Counted"
    assert holder.child_reads == 1


def test_method_receiver_read_once() -> None:
    holder = p.Counted()
    assert p.method_through_prop(holder, [5]) == [[[5]]]
    assert holder.child_reads == 1


def test_lambda_keeps_and_returns() -> None:
    keep, acc = p.make_lambda()
    assert keep([1]) is None
    assert acc == [[1]]
    assert keep.__name__ == "<lambda>"


def test_super_init() -> None:
    obj = p.construct([1])
    assert obj.x == [1]
    assert p.LOG == ["Derived.__init__", "Base.__init__ [1]"]


def test_copy_method_touches_nothing_more() -> None:
    d = p.LoggingMap(a=[1], b=[2])
    x = p.copy_of(d)
    assert dict(x) == {"a": [1], "b": [2]} and x["a"] is dict.__getitem__(d, "a")
    assert p.LOG == ["copy", "get 'a'"]
    assert (d.gets, d.item_calls) == (0, 0)


def test_copy_copy_touches_nothing_more() -> None:
    d = p.LoggingMap(a=[1])
    x = p.copy_module(d)
    assert type(x) is p.LoggingMap and dict.__eq__(x, d)
    assert p.LOG == COPY_LOG
    assert (d.gets, d.sets, d.item_calls) == (0, 0, COPY_LOG.count("items"))


def test_exec_namespace() -> None:
    traced = p.Traced()
    p.Traced.seen.clear()
    ns: dict[str, object] = {"t": traced, "rows": [[1]]}
    out = p.run_exec("rows.append(t.x)\nkept = rows\n", ns)
    assert out is ns and ns["kept"] is ns["rows"]
    assert sorted(ns) == ["__builtins__", "kept", "rows", "t"]
    assert [s[0] for s in p.Traced.seen] == ["x"]


def test_traced_object_attribute_log() -> None:
    t = p.Traced()
    p.Traced.seen.clear()
    result = p.keep_traced(t)
    assert result["res"] == "Traced"
    assert p.Traced.seen == []  # keeping and naming an object reads none of its attributes
    t.x  # noqa: B018
    assert p.Traced.seen == [("x", False, "Traced")]


def test_yield_of_an_item_reads_it_once() -> None:
    p.LOG.clear()
    m = p.LoggingMap(a=1, b=2)
    assert list(p.yield_items(m, ["a", "b"])) == [1, 2]
    assert m.gets == 2 and p.LOG == ["get 'a'", "get 'b'"]


def test_yield_of_a_view_is_the_view() -> None:
    seen = [(type(v).__name__, float(v[0]), v.base is not None) for v in p.yield_views(3)]
    assert seen == [("ndarray", 0.0, True), ("ndarray", 1.0, True), ("ndarray", 2.0, True)]


def test_a_call_on_a_branch_not_taken_reads_nothing() -> None:
    """``k = key_func(i) if key else i`` with ``key_func`` bound only when a key is given: nothing is
    read before the statement that the statement itself does not read (it raised UnboundLocalError)."""
    assert p.keyed([[1], [2]]) == [[1], [2]]
    assert p.keyed([[1]], key=len) == [1]
    assert p.keyed_or([[1]]) == [True]
    assert p.first_or_called([[1]]) == [1]
    assert p.first_or_called([], make=lambda items: ["made"]) == ["made"]


def test_a_return_reads_its_value_once() -> None:
    """``return obj.prop`` and ``return obj.prop, n`` (told to the runtime when an array or tensor):
    the property runs once, the very object is returned, and nothing stays bound in the frame."""
    import numpy as np

    obj = p.Counted(np.zeros(2))
    assert p.return_prop(obj) is obj._value
    assert p.return_prop_in_a_tuple(obj, 3) == (obj._value, 3)
    assert p.return_buffer(obj) is obj._value
    assert obj.reads == 3
    plain = p.Counted([1])
    assert p.return_prop(plain) is plain._value and plain.reads == 1
    first, second = p.Counted(np.zeros(2)), p.Counted(np.ones(2))
    assert p.return_one_branch(first, second, True) is first._value
    assert p.return_one_branch(first, second, False) is second._value
    assert (first.reads, second.reads) == (1, 1)


def test_a_get_of_something_named_as_a_context_var_reads_once() -> None:
    holder = p.Holder()
    assert p.read_through_get(holder) == [1, 2, 3]
    assert p.LOG == ["get 'k'", "get 'k'", "get 'missing'"]


def test_a_returned_default_is_the_default_itself() -> None:
    assert p.stamp(1) is p.stamp.__defaults__[0]  # each result let go: what any caller holds is unchanged
    assert p.stamp(2)[-2:] == [1, 2]


def test_a_kept_default_is_the_default_itself() -> None:
    a = p.Keeps()
    a.items.append(1)
    assert a.items is p.Keeps.__init__.__defaults__[0] and a.items[-1] == 1
    a.items.clear()


def test_a_repetition_holds_one_row() -> None:
    rows = p.grid(3)
    assert rows[1] is rows[2] and rows[0] == [1, 1, 1] and rows[1] == [0, 0, 0]


def test_a_mock_passed_through_the_shapes_records_only_the_programs_calls() -> None:
    from unittest import mock

    m = mock.MagicMock()
    kept, table, out = p.mock_through_shapes(m)
    assert [name for name, _, _ in m.mock_calls] == ["", "send", "publish"]
    assert (len(kept), len(table), len(out)) == (1, 2, 2)
