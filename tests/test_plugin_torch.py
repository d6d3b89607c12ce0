"""The torch adapter: changes of kept state dicts, never the documented sharing."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

# The first optimizer step imports torch._dynamo and friends. Do it here, before any
# pytester snapshot of sys.modules: a module dropped after an in-process run and
# imported again would register its torch operator library twice.
_p = torch.zeros(1, requires_grad=True)
_p.sum().backward()
torch.optim.Adam([_p]).step()
torch.optim.SGD([_p], lr=0.1).step()

TRAINING = """
import copy
import torch


def make():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def train(model, opt, steps=3):
    for _ in range(steps):
        loss = model(torch.ones(5, 4)).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_ordinary_training_with_checkpoints(tmp_path):
    model, opt = make()
    for epoch in range(2):
        train(model, opt)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, tmp_path / f"{epoch}.pt")
    best = copy.deepcopy(model.state_dict())
    train(model, opt)
    model.load_state_dict(best)
    ckpt = torch.load(tmp_path / "1.pt")
    opt.load_state_dict(copy.deepcopy(ckpt["opt"]))
    model.load_state_dict(ckpt["model"])


def test_best_is_the_live_parameters():
    model, opt = make()
    train(model, opt)
    best = model.state_dict()  # the live tensors, not a copy (pytorch/pytorch#34765)
    train(model, opt)
    model.load_state_dict(best)


def test_kept_optimizer_state_moves_on():
    model, opt = make()
    train(model, opt)
    saved = opt.state_dict()
    train(model, opt)
    opt.load_state_dict(saved)


def test_best_kept_by_the_test_never_loaded():
    model, opt = make()
    best = model.state_dict()  # held by the test's own name until it returns
    train(model, opt)
    assert "0.weight" in best


def test_best_copied_by_the_test_never_loaded():
    model, opt = make()
    best = copy.deepcopy(model.state_dict())
    train(model, opt)
    assert "0.weight" in best


def test_keys_read_then_trained():
    model, opt = make()
    sd = model.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    train(model, opt)


def test_resumed_from_a_checkpoint(tmp_path):
    model, opt = make()
    train(model, opt)
    torch.save(opt.state_dict(), tmp_path / "opt.pt")
    ckpt = torch.load(tmp_path / "opt.pt")
    opt.load_state_dict(ckpt)  # Adam keeps the loaded tensors, which the next steps move on
    train(model, opt)


def test_partial_load_through_the_live_state_dict():
    model, opt = make()
    donor = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    own = model.state_dict()  # a handle: the test writes the live parameters through it
    with torch.no_grad():
        for name, p in donor.state_dict().items():
            if own[name].shape == p.shape:
                own[name].copy_(p)
    train(model, opt)
    assert own["0.weight"].shape == (8, 4)


def test_best_labelled_then_trained():
    model, opt = make()
    best = model.state_dict()
    best["epoch"] = 3  # a key of its own: nothing written through it into the model
    train(model, opt)
    assert "0.weight" in best
"""


def findings_by_test(pytester) -> dict[str, list[dict]]:
    """The JSON report's findings (``--aliascheck-report=r.json``), by test function name."""
    by_test: dict[str, list[dict]] = {}
    for f in json.loads((pytester.path / "r.json").read_text())["findings"]:
        by_test.setdefault(f["test"].split("::")[1], []).append(f)
    return by_test

def test_training_is_clean_and_kept_live_state_is_flagged(pytester):
    pytester.makepyfile(test_train=TRAINING)
    result = pytester.runpytest("--aliascheck", "--aliascheck-report=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, failed=4)
    by_test = findings_by_test(pytester)
    assert "test_ordinary_training_with_checkpoints" not in by_test
    # Writing the live parameters through the snapshot makes it the test's handle; a key added is not that.
    assert "test_partial_load_through_the_live_state_dict" not in by_test
    assert {f["check"] for f in by_test["test_best_labelled_then_trained"]} == {"last-use"}
    assert "test_best_copied_by_the_test_never_loaded" not in by_test
    # Judged right after the test's last read of the name that held it (the assert, after training).
    assert {f["check"] for f in by_test["test_best_kept_by_the_test_never_loaded"]} == {"last-use"}
    # Names the test read for the last time before the state changed hold nothing (resume, key checks).
    assert "test_keys_read_then_trained" not in by_test
    assert "test_resumed_from_a_checkpoint" not in by_test
    best = by_test["test_best_is_the_live_parameters"]
    assert {f["path"] for f in best} == {"['0.weight']", "['0.bias']", "['2.weight']", "['2.bias']"}
    assert {f["check"] for f in best} == {"reentry"}
    assert all(f["after"].startswith("tensor bytes changed") for f in best)
    kept = by_test["test_kept_optimizer_state_moves_on"]
    assert {f["owner"] for f in kept} == {"torch.optim.adam.Adam"}
    assert any(f["path"].startswith("['state'][0]['exp_avg']") for f in kept)
    result.stdout.fnmatch_lines(["*owner:    torch.nn.modules.container.Sequential (Sequential#1)*"])


SHALLOW = """
import torch


def test_a_shallow_copy_of_the_live_tensors():
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    best = model.state_dict().copy()  # a new dict, the same parameter tensors
    for _ in range(2):
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
    model.load_state_dict(best)


def test_cloned_tensors_are_clean():
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    best = {k: v.clone() for k, v in model.state_dict().items()}
    for _ in range(2):
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
    model.load_state_dict(best)
"""


def test_tensors_are_followed_by_identity_into_a_shallow_copy(pytester):
    pytester.makepyfile(test_shallow=SHALLOW)
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*owner:    torch.nn.modules.linear.Linear (Linear#1)",
        "*change:   [[]'weight']    tensor bytes changed at 3 of 3 elements, max |\u0394| *",
        "*seen by:  re-entry (reset/load_state_dict) (*)",
        "FAILED test_shallow.py::test_a_shallow_copy_of_the_live_tensors*",
    ])



PIECES = """
import io

import torch


def fit(model, how):
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    best = None
    for epoch in range(4):
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
        if epoch == 1:
            sd = model.state_dict()
            if how == "cpu":
                best = {k: v.cpu() for k, v in sd.items()}  # a CPU tensor's .cpu() is the tensor
            elif how == "copy":
                best = {k: v.to("cpu", copy=True) for k, v in sd.items()}
            else:  # written at once: nobody keeps the tensors
                torch.save({k: v for k, v in sd.items()}, io.BytesIO())
            del sd
    return best


def test_best_by_cpu_kept_by_the_caller():
    best = fit(torch.nn.Linear(3, 1), "cpu")
    assert set(best) == {"weight", "bias"}


def test_best_copied_to_cpu():
    best = fit(torch.nn.Linear(3, 1), "copy")
    assert set(best) == {"weight", "bias"}


def test_tensors_saved_at_once_then_trained():
    assert fit(torch.nn.Linear(3, 1), "save") is None


def test_best_by_cpu_then_the_state_read_again():
    model = torch.nn.Linear(3, 1)
    best = fit(model, "cpu")
    assert all(torch.equal(best[k], v) for k, v in model.state_dict().items())


def test_keep_vars_handles_held_through_training():
    model = torch.nn.Linear(3, 1)
    handles = model.state_dict(keep_vars=True)  # the Parameters themselves, asked for
    fit(model, "save")
    assert handles["weight"] is model.weight


class Ema:
    def __init__(self, model):
        self.module = torch.nn.Linear(3, 1)
        self.shadow = dict(self.module.state_dict())  # handles into its own module, written through

    def update(self, model):
        with torch.no_grad():
            for k, v in model.state_dict().items():
                self.shadow[k].mul_(0.5).add_(v, alpha=0.5)


def test_an_ema_writes_through_its_shadow_dict():
    model = torch.nn.Linear(3, 1)
    ema = Ema(model)
    for _ in range(2):
        fit(model, "save")
        ema.update(model)
"""


def test_live_tensors_of_a_dropped_snapshot_kept_elsewhere_are_judged_at_the_end(pytester):
    """*Kept in pieces* for buffers: the snapshot is dropped at once, its very tensors live on in the
    caller's dict and the training writes them. Judged at the test's end, where something other than
    the snapshot and the ledger refers to a changed tensor; a copy, or tensors written at once and
    dropped, are clean (and need no look at the heap), as are ``state_dict(keep_vars=True)`` (handles
    asked for) and tensors the project writes through itself (an EMA's shadow dict of its own module)."""
    pytester.makepyfile(test_pieces=PIECES)
    result = pytester.runpytest("--aliascheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        "*owner:    torch.nn.modules.linear.Linear (Linear#1)",
        "*change:   [[]'weight']    tensor bytes changed at 3 of 3 elements, max |\u0394| *",
        "FAILED test_pieces.py::test_best_by_cpu_kept_by_the_caller*",
    ])
    # A later state_dict() of the same model does not drop the earlier record whose tensors are kept.
    result.stdout.fnmatch_lines(["FAILED test_pieces.py::test_best_by_cpu_then_the_state_read_again*"])


SAVED = """
import copy
import io
import pickle

import torch


class Trainer:
    def __init__(self, keep):
        torch.manual_seed(0)
        self.model = torch.nn.Linear(3, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.5, momentum=0.9)
        self.keep, self.best = keep, None

    def step(self):
        self.model(torch.ones(2, 3)).sum().backward()
        self.opt.step()

    def fit(self, save):
        for epoch in range(3):
            self.step()
            if epoch == 0:
                self.best = self.keep(self.model.state_dict())
        return save(self.best)


def to_torch(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def in_checkpoint(state):
    buf = io.BytesIO()
    torch.save({"model": state, "epoch": 0}, buf)
    return buf.getvalue()


def live(state):
    return state


def test_best_saved_after_training():  # the file holds the last weights
    Trainer(live).fit(to_torch)


def test_best_inside_a_checkpoint_saved_after_training():
    Trainer(live).fit(in_checkpoint)


def test_optimizer_state_pickled_after_more_steps():
    t = Trainer(live)
    t.step()
    state = t.opt.state_dict()
    t.step()
    pickle.dumps(state)


def test_best_copied_then_saved():
    Trainer(copy.deepcopy).fit(to_torch)


def test_saved_at_once_each_epoch():
    t = Trainer(live)
    for _ in range(3):
        t.step()
        to_torch(t.model.state_dict())
        in_checkpoint(t.model.state_dict())
        pickle.dumps(t.opt.state_dict())


def save_now(t):
    state = t.model.state_dict()
    state["note"] = "epoch 0"  # the holder's own key: not a change of live state
    return to_torch(state)


def test_saved_before_training_goes_on():
    t = Trainer(live)
    save_now(t)
    t.step()
"""


def test_a_snapshot_serialised_after_its_owner_changed_it(pytester):
    pytester.makepyfile(test_saved=SAVED)
    result = pytester.runpytest("--aliascheck", "--aliascheck-report=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=3)
    by_test = findings_by_test(pytester)
    assert set(by_test) == {"test_best_saved_after_training", "test_best_inside_a_checkpoint_saved_after_training",
                            "test_optimizer_state_pickled_after_more_steps"}
    for found in by_test.values():
        assert {f["check"] for f in found} == {"save"}
    assert {f["path"] for f in by_test["test_best_saved_after_training"]} == {"['weight']", "['bias']"}
    assert by_test["test_best_saved_after_training"][0]["handover"].endswith("test_saved.py:23")  # the keep
    assert any(f["path"].startswith("['state'][0]['momentum_buffer']")
               for f in by_test["test_optimizer_state_pickled_after_more_steps"])


COMPILED = '''
import torch
from torch._dynamo.utils import counters


def helper(y, hist):
    hist.append(y)
    t = torch.sigmoid(y)
    buf = t.clone()
    buf.add_(1)
    return t, buf


def step(x, w, hist):
    out = []
    y = x @ w
    out.append(y)
    z = torch.relu(y) + 1
    s, b = helper(z, hist)
    hist.append(s)
    acc = {}
    for k in range(2):
        s = s * 2
        acc[k] = s
    keep = lambda v: out.append(v)
    keep(b)
    return z, out, acc


def test_compiled_fullgraph():
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(step, fullgraph=True, backend="eager")
    x, w, hist = torch.randn(4, 4), torch.randn(4, 4), []
    z, out, acc = compiled(x, w, hist)
    assert torch.equal(z, torch.relu(x @ w) + 1) and len(hist) == 2 and len(out) == 2
    print("DYNAMO", sorted((k, sorted(v.items())) for k, v in counters.items() if k in ("stats", "graph_break")))
'''


def test_torch_compile_builds_the_graph_a_plain_run_builds(pytester: pytest.Pytester) -> None:
    """Marked project code under ``torch.compile(fullgraph=True)``: each question the marked code asks
    is answered "nothing to look at" inside a graph, so it compiles (it raised ``Unsupported`` on the
    compiled gate before), with the same graphs and no graph break, as it does plain."""
    pytester.makepyfile(model_lib=COMPILED.split("def test_")[0], test_compiled="from model_lib import *\n"
                        + "def test_" + COMPILED.split("def test_")[1])
    pytester.makefile(".toml", pyproject='[project]\nname = "compiled"\n')
    seen = []
    for flags in ([], ["--aliascheck"]):
        result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", *flags)
        result.assert_outcomes(passed=1)
        seen.append([line.partition("DYNAMO")[2] for line in result.outlines if "DYNAMO" in line])
    assert seen[0] and seen[0] == seen[1]
