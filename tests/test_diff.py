"""diff(): every changed path named, in the forms reports print."""

from __future__ import annotations

import collections
import dataclasses
import enum
import threading

import numpy as np
import pytest
import torch

from aliascheck.diff import Change, diff, diff_shadows, iter_leaves, node_at, show
from aliascheck.fingerprint import Limits, fingerprint
from aliascheck.shadow import BufferToken, Opaque, decode, stub_type
from aliascheck.walk import walk


class Color(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass
class Cfg:
    lr: float
    tags: list


class Refuses:
    """Forces the slow walk for any value that holds one."""

    def __reduce_ex__(self, protocol):
        raise TypeError("refused")


def changes(before, after):
    return [str(c) for c in diff(fingerprint(before), fingerprint(after))]


def test_every_changed_path_is_named_not_only_the_first():
    before = {"a": 1, "b": [1, 2, 3], "c": {"d": "x"}}
    after = {"a": 2, "b": [1, 5, 3, 4], "c": {"e": "x"}}
    assert changes(before, after) == [
        "['a']: 1 -> 2",
        "['b'][1]: 2 -> 5",
        "['b'][3]: <missing> -> 4",
        "['c']['d']: 'x' -> <missing>",
        "['c']['e']: <missing> -> 'x'",
    ]


def test_type_changes_sets_and_tuples():
    assert changes({"x": 1}, {"x": 1.0}) == ["['x']: 1 -> 1.0"]
    assert changes({"s": {1, 2}}, {"s": {1, 3}}) == ["['s']: {1, 2} -> {1, 3}"]
    assert changes((1, 2), (1, 2, 3)) == ["[2]: <missing> -> 3"]
    assert changes([Color.RED], [Color.BLUE]) == [f"[0]: {__name__}.Color(1) -> {__name__}.Color(2)"]


def test_objects_by_attribute_and_type_name():
    assert changes(Cfg(0.1, ["a"]), Cfg(0.2, ["a", "b"])) == [".lr: 0.1 -> 0.2", ".tags[1]: <missing> -> 'b'"]
    assert [c.kind for c in diff(fingerprint(Cfg(0.1, [])), fingerprint(Color.RED))] == ["type"]


def test_dict_subclasses_compare_their_items():
    before = collections.OrderedDict(a=[1])
    after = collections.OrderedDict(a=[2])
    assert changes(before, after) == ["['a'][0]: 1 -> 2"]
    dd = collections.defaultdict(list, {"k": [1]})
    assert changes(dd, collections.defaultdict(list, {"k": [1], "j": []})) == ["['j']: <missing> -> []"]


def test_tensor_metadata_and_bytes():
    t = torch.zeros(4)
    assert changes({"t": t}, {"t": torch.zeros(5)}) == [
        "['t']: Tensor(dtype float32, shape [4]) -> Tensor(dtype float32, shape [5])"
    ]
    assert changes({"t": t}, {"t": t.double()})[0].startswith("['t']: Tensor(dtype float32")
    p = torch.nn.Parameter(torch.zeros(2))
    before = fingerprint({"w": p})
    with torch.no_grad():
        p.add_(1)
    assert [str(c) for c in diff(before, fingerprint({"w": p}))] == ["['w']: tensor bytes changed (shape [2])"]


def test_tensors_that_cannot_be_read_are_unverifiable_not_changed():
    meta = fingerprint({"m": torch.zeros(2, device="meta")})
    assert meta.unverifiable() == [("['m']", "torch.Tensor: content not read on this device")]
    assert diff(meta, fingerprint({"m": torch.ones(2, device="meta")})) == []
    sparse = fingerprint(torch.zeros(3).to_sparse())
    assert sparse.opaque == 1 and "layout" in sparse.unverifiable()[0][1]


def test_unusual_tensor_kinds_are_hashed():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert fingerprint(x.t()) == fingerprint(x.t().contiguous())
    assert fingerprint(torch.tensor(3)) != fingerprint(torch.tensor(4))
    z = torch.tensor([1 + 2j])
    assert fingerprint(z.conj()) == fingerprint(z.conj().resolve_conj())
    assert fingerprint(torch.zeros(2, dtype=torch.bfloat16)) != fingerprint(torch.ones(2, dtype=torch.bfloat16))
    assert fingerprint(torch.Generator()).opaque == 1


def test_memoryviews_and_numpy_scalars():
    assert changes(memoryview(b"ab"), memoryview(b"ac")) == ["<root>: memoryview bytes changed (shape [2])"]
    view = memoryview(b"x")
    view.release()
    assert fingerprint(view).opaque == 1
    assert changes([np.int64(1)], [np.int64(2)])[0].startswith("[0]")


def test_opaque_against_a_value_is_not_reported_but_a_value_replaced_by_one_is():
    assert changes({"x": threading.Lock()}, {"x": 1}) == []
    assert [c.kind for c in diff(fingerprint({"x": 1}), fingerprint({"x": threading.Lock()}))] == ["type"]


def test_the_walk_and_the_fast_path_agree_on_the_same_value():
    t = torch.arange(3.0)
    shared = [1]
    value = {"cfg": Cfg(0.5, shared), "again": shared, "t": t, "tup": (1, [2]), "set": {"a"},
             "fs": frozenset({1}), "ba": bytearray(b"x"), "enum": Color.RED, "fn": len, "arr": np.ones(2)}
    fast = fingerprint(value)
    assert fast.exact
    tree, opaque, truncated = walk(value, Limits())
    assert (opaque, truncated) == (0, False)
    assert diff_shadows(fast.shadow(), tree) == []
    slow_value = dict(value, bad=Refuses())
    slow = fingerprint(slow_value)
    assert not slow.exact
    slow_value["cfg"].lr = 0.25
    slow_value["t"][0] = 9
    assert [str(c) for c in diff(slow, fingerprint(slow_value))] == [
        "['cfg'].lr: 0.5 -> 0.25",
        "['t']: tensor bytes changed (shape [3])",
    ]


def test_the_walk_keeps_cycles_through_objects():
    cfg = Cfg(1.0, [])
    cfg.tags.append(cfg)
    fp = fingerprint({"cfg": cfg, "bad": Refuses()})
    assert not fp.exact and not fp.truncated
    assert fp == fingerprint({"cfg": cfg, "bad": Refuses()})


def test_the_walk_stops_at_the_size_limit():
    fp = fingerprint([[i] for i in range(50)] + [Refuses()], Limits(max_items=10))
    assert fp.truncated and any("size limit" in why for _, why in fp.unverifiable())


def test_leaves_and_rendering():
    fp = fingerprint({"cfg": Cfg(1.0, ["x"]), "t": torch.zeros(1), "lock": threading.Lock(), "n": None})
    leaves = dict(iter_leaves(fp.shadow()))
    assert set(leaves) == {"['cfg'].lr", "['cfg'].tags[0]", "['t']", "['lock']", "['n']"}
    assert show(leaves["['t']"]) == "Tensor(dtype float32, shape [1])"
    assert show(leaves["['lock']"]) == "<_thread.lock: a lock>"
    assert show(stub_type("pkg.Thing")) == "pkg.Thing"
    assert show(fingerprint([Cfg(1.0, [])]).shadow()) == "<list of 1>"
    assert str(Change("", "1", "2")) == "<root>: 1 -> 2"


def test_shadow_streams_round_trip_through_pickle():
    fp = fingerprint({"cfg": Cfg(1.0, ["x"]), "bad": Refuses(), "t": torch.ones(2)})
    tree = fp.shadow()
    again = decode(__import__("pickle").dumps(tree))
    assert diff_shadows(tree, again) == []
    assert isinstance(tree["bad"], Opaque) and isinstance(tree["t"], BufferToken)


@pytest.mark.parametrize("value", [Color.RED, Cfg(1, []), collections.Counter("aab"), range(3), 1 + 2j])
def test_fingerprints_of_common_types_are_stable(value):
    assert fingerprint(value) == fingerprint(value)
    assert fingerprint(value).verifiable


def test_attrs_classes_slotted_or_not_by_field():
    attr = pytest.importorskip("attr")

    @attr.s(slots=True)
    class Slotted:
        a = attr.ib()
        b = attr.ib(factory=list)

    @attr.define
    class Defined:
        x: int
        y: list = attr.Factory(list)

    assert changes(Slotted(1), Slotted(2)) == [".a: 1 -> 2"]
    assert changes(Defined(1, [1]), Defined(1, [1, 2])) == [".y[1]: <missing> -> 2"]


# -- collapse=True: a collection's change said once, at the collection ------------------
def collapsed(before, after):
    return [str(c) for c in diff(fingerprint(before), fingerprint(after), collapse=True)]


def test_collapse_says_a_grown_or_shrunk_list_once():
    assert collapsed({"seen": []}, {"seen": list(range(36))}) == [
        "['seen']: list grew from 0 to 36 items (appended 0, 1, 2, ...)"]
    assert collapsed({"seen": [1, 2]}, {"seen": [1]}) == ["['seen']: list shrank from 2 to 1 item (removed 2)"]


def test_collapse_says_many_changed_items_once_and_few_one_by_one():
    many = collapsed(list(range(40)), [x + 1 if x % 3 == 0 else x for x in range(40)])
    assert many == ["<root>: list changed at 14 of 40 items (first [0]: 0 -> 1)"]
    assert collapsed([1, 2, 3], [1, 5, 3]) == ["[1]: 2 -> 5"]


def test_collapse_says_gained_and_lost_keys_and_set_items():
    assert collapsed({"a": 1}, {"a": 1, "b": 2, "c": 3}) == ["<root>: dict gained 2 keys ('b', 'c')"]
    assert collapsed({"a": 1, "x": 1, "y": 2}, {"a": 1}) == ["<root>: dict lost 2 keys ('x', 'y')"]
    assert collapsed({"a": 1}, {"a": 1, "b": 2}) == ["['b']: <missing> -> 2"]  # one key: its value is shown
    assert collapsed(set(range(20)), set(range(9))) == ["<root>: set lost 11 items (9, 10, 11, ...)"]
    assert collapsed({1, 2}, {2, 3, 4}) == ["<root>: set gained 2 items (3, 4) and lost 1 item (1)"]


def test_collapse_names_the_changed_elements_of_a_small_tensor():
    torch = pytest.importorskip("torch")
    t = torch.zeros(16)
    before = fingerprint({"w": t})
    t[3], t[5] = 0.04, -0.01
    assert collapsed_fp(before, fingerprint({"w": t})) == [
        "['w']: tensor bytes changed at 2 of 16 elements, max |\u0394| 0.04"]
    big = torch.zeros(1000)  # bytes of large buffers are not kept: only that they changed
    before = fingerprint(big)
    big[0] = 1
    assert collapsed_fp(before, fingerprint(big)) == ["<root>: tensor bytes changed (shape [1000])"]


def collapsed_fp(before, after):
    return [str(c) for c in diff(before, after, collapse=True)]


def test_without_collapse_every_path_is_its_own_change():
    assert [str(c) for c in diff(fingerprint({"s": [1]}), fingerprint({"s": [1, 2, 3]}))] == [
        "['s'][1]: <missing> -> 2", "['s'][2]: <missing> -> 3"]


class _Kind(str, enum.Enum):
    A = "a"


@dataclasses.dataclass
class _Cell:
    value: list


def test_node_at_follows_every_path_a_diff_writes():
    """Each changed path leads back to its part of the tree, keys of any type included (an enum's
    member, as a str subclass's key would be, shows as its reduction, not a repr)."""
    before = fingerprint({_Kind.A: [_Cell([1])], "b": {"c": _Cell([2])}})
    after = fingerprint({_Kind.A: [_Cell([1, 9])], "b": {"c": _Cell([3])}})
    tree = after.shadow()
    paths = [c.path for c in diff(before, after)]
    assert len(paths) == 2, paths
    for path in paths:
        owner = path.rpartition(".value")[0]
        assert type(node_at(tree, owner)).__name__ == "_Cell", (path, owner)
    assert node_at(tree, "['nope']") is None and node_at(tree, "") is tree
