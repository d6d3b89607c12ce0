"""isolate(): deepcopy's semantics, faster, and explicit about what it cannot copy."""

from __future__ import annotations

import copy
import subprocess
import sys
import threading
from collections import OrderedDict, defaultdict

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aliascheck
from aliascheck.fingerprint import fingerprint
from aliascheck.isolation import IsolationError, IsolationWarning, isolate

from .strategies import Record, mutable_places, mutate, states

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ids_of_mutables(obj):
    return {id(container) for _, container in mutable_places(obj)}


@SETTINGS
@given(states(with_torch=True))
def test_the_copy_equals_the_original_and_shares_nothing_mutable(state):
    copied = isolate(state)
    assert fingerprint(copied) == fingerprint(state)
    assert not ids_of_mutables(copied) & ids_of_mutables(state)


@SETTINGS
@given(states(with_torch=True), st.data())
def test_mutating_the_original_leaves_the_copy_unchanged(state, data):
    copied = isolate(state)
    before = fingerprint(copied)
    places = mutable_places(state)
    for _, container in data.draw(st.lists(st.sampled_from(places), max_size=3)) if places else []:
        mutate(container, data.draw(st.integers(0, 7)))
    assert fingerprint(copied) == before


def test_atoms_and_all_atomic_tuples_come_back_as_themselves():
    big = tuple(range(1000))
    for value in (1, 2.5, "s", b"b", None, True, big, frozenset({1, 2}), torch.float32, np.int64(3), len):
        assert isolate(value) is value
    assert isolate((1, [2]))[1] is not (1, [2])[1]


def test_shared_references_and_cycles_are_preserved():
    shared = [1, 2]
    tensor = torch.arange(3)
    state = {"a": shared, "b": shared, "t": tensor, "also_t": [tensor], "rec": Record("r", shared)}
    state["self"] = state
    loop: list = []
    loop.append((loop,))  # a cycle through a tuple
    state["loop"] = loop
    copied = isolate(state)
    assert copied["a"] is copied["b"] is copied["rec"].payload and copied["a"] is not shared
    assert copied["t"] is copied["also_t"][0] and copied["t"] is not tensor
    assert copied["self"] is copied
    assert copied["loop"][0][0] is copied["loop"] and copied["loop"] is not loop


def test_tensors_are_cloned_not_shared():
    view = torch.arange(10.0)[2:8:2]
    copied = isolate({"view": view})["view"]
    assert torch.equal(copied, view) and copied.untyped_storage().data_ptr() != view.untyped_storage().data_ptr()
    view.add_(1)
    assert copied.tolist() == [2.0, 4.0, 6.0]


def test_what_clone_would_lose_goes_through_deepcopy():
    param = torch.nn.Parameter(torch.ones(2))
    grad = torch.ones(2, requires_grad=True)
    tagged = torch.ones(2)
    tagged.note = "kept"
    copied = isolate([param, grad, tagged])
    assert type(copied[0]) is torch.nn.Parameter and copied[1].requires_grad and copied[2].note == "kept"


def test_arrays_are_copied_and_object_arrays_deeply():
    inner = [1]
    objects = np.array([inner, None], dtype=object)
    numbers = np.arange(6).reshape(2, 3).T
    copied = isolate({"objects": objects, "numbers": numbers})
    assert copied["objects"][0] == [1] and copied["objects"][0] is not inner
    assert np.array_equal(copied["numbers"], numbers) and not np.shares_memory(copied["numbers"], numbers)


def test_dict_kinds_keep_their_type_and_attributes():
    ordered = OrderedDict(w=torch.ones(1))
    ordered._metadata = {"": {"version": 1}}  # as nn.Module.state_dict() returns it
    counts = defaultdict(list, a=[1])
    copied = isolate([ordered, counts])
    assert type(copied[0]) is OrderedDict and copied[0]._metadata == {"": {"version": 1}}
    assert copied[0]._metadata is not ordered._metadata
    assert copied[1].default_factory is list and copied[1]["a"] is not counts["a"]


class Key:
    """Hashable by identity, and mutable: deepcopy copies such a key."""


def test_non_atomic_keys_are_copied_like_deepcopy_does():
    key = Key()
    copied = isolate({key: 1, (1, 2): 2, "k": [3]})
    assert list(copied.values()) == [1, 2, [3]] and type(next(iter(copied))) is Key
    assert next(iter(copied)) is not key and (1, 2) in copied


def test_an_uncopyable_value_raises_naming_its_path():
    with pytest.raises(IsolationError, match=r"cannot isolate lock at state\['a'\]\[1\]") as info:
        isolate({"a": [1, threading.Lock()]})
    assert isinstance(info.value, TypeError) and "get_state()" in str(info.value)


def test_share_mode_keeps_the_uncopyable_value_shared_and_copies_the_rest():
    lock, other = threading.Lock(), threading.Lock()
    state = {"lock": lock, "again": lock, "other": other, "data": [1]}
    with pytest.warns(IsolationWarning, match="stays shared") as record:
        copied = isolate(state, on_uncopyable="share")
    assert copied["lock"] is lock and copied["again"] is lock and copied["other"] is other
    assert copied["data"] == [1] and copied["data"] is not state["data"]
    assert len(record) == 2  # one warning per uncopyable object


def test_lambdas_and_local_classes_need_no_pickling():
    class Local:
        pass

    state = {"fn": lambda x: x, "obj": Local()}
    copied = isolate(state)
    assert copied["fn"] is state["fn"] and type(copied["obj"]) is Local and copied["obj"] is not state["obj"]


def test_the_package_attribute_is_callable_whichever_way_it_was_imported():
    assert aliascheck.isolate({"a": [1]}) == {"a": [1]}


def test_importing_isolate_imports_neither_torch_nor_numpy():
    code = "import sys, aliascheck.isolation; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_generator_state_copy_equals_its_deepcopy():
    state = {"g": torch.Generator().get_state(), "n": 3}
    assert fingerprint(isolate(state)) == fingerprint(copy.deepcopy(state))
