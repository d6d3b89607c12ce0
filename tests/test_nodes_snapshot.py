"""The snapshot codec of the fixed nodes: freeze in the worker, thaw a new copy per read."""

from __future__ import annotations

import pickle
import random
import threading

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aliascheck.fingerprint import fingerprint
from aliascheck.isolation import IsolationWarning
from aliascheck.nodes._snapshot import Copied, Freezer, Frozen, thaw

from .strategies import mutable_places, mutate, states


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states(with_torch=True), st.data())
def test_a_thawed_state_equals_the_frozen_one_whatever_it_is_mutated_into(state, data):
    freezer = Freezer()
    frozen = [freezer(state) for _ in range(3)]  # repeated freezes may seed big tuples
    before = fingerprint(state)
    places = mutable_places(state)
    for _, container in data.draw(st.lists(st.sampled_from(places), max_size=3)) if places else []:
        mutate(container, data.draw(st.integers(0, 7)))
    for snapshot in frozen:
        assert fingerprint(thaw(snapshot)) == before


def test_each_thaw_is_a_new_copy():
    snapshot = Freezer()({"a": [1], "t": torch.zeros(2)})
    first, second = thaw(snapshot), thaw(snapshot)
    first["a"].append(2)
    first["t"].add_(1)
    assert second == {"a": [1], "t": second["t"]} and second["t"].tolist() == [0.0, 0.0]


def test_small_tensors_go_into_the_pickle_and_the_rest_aside():
    small, big, param = torch.arange(4).reshape(2, 2), torch.zeros(1 << 17), torch.nn.Parameter(torch.ones(1))
    state = {"small": small, "again": small, "big": big, "param": param, "array": np.arange(3)}
    snapshot = Freezer()(state)
    assert isinstance(snapshot, Frozen) and len(snapshot.side) == 3  # big, param, array
    copied = thaw(snapshot)
    assert copied["small"] is copied["again"] and torch.equal(copied["small"], small)
    assert type(copied["param"]) is torch.nn.Parameter and copied["big"].data_ptr() != big.data_ptr()
    assert np.array_equal(copied["array"], state["array"])


@pytest.mark.parametrize(
    "tensor",
    [
        torch.zeros(0, 3),
        torch.tensor(2.5),
        torch.arange(12.0).reshape(3, 4).t(),
        torch.ones(2, dtype=torch.bfloat16),
        torch.ones(2, requires_grad=True),
        torch.randn(2, dtype=torch.complex64).conj(),
    ],
    ids=["empty", "0-dim", "non-contiguous", "bfloat16", "requires-grad", "conj-bit"],
)
def test_tensors_of_every_kind_come_back_equal(tensor):
    copied = thaw(Freezer()({"t": tensor}))["t"]
    assert copied.dtype == tensor.dtype and copied.shape == tensor.shape
    assert copied.requires_grad == tensor.requires_grad
    assert torch.equal(copied.detach().resolve_conj(), tensor.detach().resolve_conj())


def test_a_big_tuple_handed_out_again_is_shared_not_pickled():
    rng = random.Random(0).getstate()
    state = {"rng": rng, "also": [rng[1]], "pad": list(range(1000))}
    freezer = Freezer()
    sizes = [len(getattr(s, "data", s)) for s in (freezer(state) for _ in range(4))]
    assert sizes[-1] < sizes[0] / 2  # seeded after it was seen twice
    copied = thaw(freezer(state))
    assert copied["rng"] == rng and copied["rng"][1] is rng[1] and copied["also"][0] is rng[1]
    assert copied["pad"] == state["pad"] and copied["pad"] is not state["pad"]


def test_a_new_big_tuple_every_time_is_never_seeded():
    freezer = Freezer()
    for i in range(5):
        snapshot = freezer({"rng": tuple(range(i, i + 1000))})
        assert thaw(snapshot) == {"rng": tuple(range(i, i + 1000))}
    assert freezer._seeds == ()


def test_an_unpicklable_state_is_copied_and_stays_so():
    freezer = Freezer()
    state = {"fn": lambda x: x, "data": [1]}
    first = freezer(state)
    assert isinstance(first, Copied) and isinstance(freezer({"plain": 1}), Copied)
    copied = thaw(first)
    assert copied["fn"] is state["fn"] and copied["data"] == [1] and copied["data"] is not state["data"]


def test_an_uncopyable_value_is_shared_with_a_warning():
    lock = threading.Lock()
    with pytest.warns(IsolationWarning):
        snapshot = Freezer()({"lock": lock, "data": [1]})
    with pytest.warns(IsolationWarning):
        assert thaw(snapshot)["lock"] is lock


def test_a_plain_state_freezes_to_bytes_that_plain_pickle_reads():
    snapshot = Freezer()({"index": 3, "t": torch.ones(2)})
    assert type(snapshot) is bytes and pickle.loads(snapshot)["index"] == 3
