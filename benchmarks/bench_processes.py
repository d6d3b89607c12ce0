"""What checking child processes costs: start-up with and without ``ALIASCHECK_CHILD``, and a real loader.

    python benchmarks/bench_processes.py [--rounds N] [--quick]

1. Child start: ``python -c pass`` with the startup hook's variable set (a child ledger begins:
   aliascheck imported, the spool file opened) against the same with it unset. Goal: <= 50 ms added.
2. The hook without the variable: the ``.pth`` line itself, executed in-process (what every Python
   start on this interpreter pays). Goal: <= 1 ms.
3. ``StatefulDataLoader`` with 2 worker processes over 10k items, under a checked session (its
   workers get ledgers) against no session. Goal: <= 1.2x.

Each A/B pair runs interleaved, each side a whole process; medians of N rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_aliascheck

HOOK = Path(__file__).resolve().parents[1] / "aliascheck" / "child.pth"

LOADER = """
import sys, time, warnings
warnings.simplefilter("ignore")
from torch.utils.data import Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

class Items(Dataset):
    def __init__(self, n):
        self.n, self.state = n, {"served": 0}
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        self.state["served"] += 1
        return i
    def state_dict(self):
        return dict(self.state)
    def load_state_dict(self, sd):
        self.state = dict(sd)

checked = sys.argv[1] == "checked"
if checked:
    from aliascheck.config import Options
    from aliascheck.session import Session
    session = Session(Options(enabled=True))
    session.start(children=True)
    session.begin_test("bench")
start = time.perf_counter()
loader = StatefulDataLoader(Items(10_000), batch_size=32, num_workers=2)
n = sum(len(b) for b in loader)
state = loader.state_dict()
del loader
if checked:
    found = session.end_test(0)
    session.stop()
    assert not found, found
assert n == 10_000
print(time.perf_counter() - start)
"""


def _run(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def child_start(rounds: int) -> tuple[float, float]:
    compile_aliascheck()  # as installed (see bytecode.py): ~20 ms of each child's start otherwise
    spool = tempfile.mkdtemp(prefix="aliascheck-bench-")
    plain = {k: v for k, v in os.environ.items() if k != "ALIASCHECK_CHILD"}
    checked = dict(plain, ALIASCHECK_CHILD=json.dumps({"spool": spool, "options": {"enabled": True},
                                                       "plugins": []}))
    a, b = [], []
    for _ in range(rounds):
        a.append(_run([sys.executable, "-c", "pass"], plain))
        b.append(_run([sys.executable, "-c", "pass"], checked))
    return statistics.median(a), statistics.median(b)


def hook_without_variable(loops: int = 20_000) -> float:
    line = HOOK.read_text().strip()
    code = compile(line, str(HOOK), "exec")
    saved = os.environ.pop("ALIASCHECK_CHILD", None)
    try:
        namespace: dict[str, object] = {}
        start = time.perf_counter()
        for _ in range(loops):
            exec(code, namespace)
        return (time.perf_counter() - start) / loops
    finally:
        if saved is not None:
            os.environ["ALIASCHECK_CHILD"] = saved


def loader(rounds: int) -> tuple[float, float]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("ALIASCHECK_CHILD", None)
    a, b = [], []
    for _ in range(rounds):
        for side, out in (("plain", a), ("checked", b)):
            done = subprocess.run([sys.executable, "-c", LOADER, side], env=env, check=True,
                                  capture_output=True, text=True)
            out.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(a), statistics.median(b)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else args.rounds

    plain, checked = child_start(rounds * 2)
    print(f"child start    plain {plain * 1e3:7.1f} ms   with ALIASCHECK_CHILD {checked * 1e3:7.1f} ms   "
          f"added {(checked - plain) * 1e3:6.1f} ms (goal <= 50 ms)")
    per = hook_without_variable()
    print(f".pth hook, variable unset: {per * 1e6:.2f} us per interpreter start (goal <= 1 ms)")
    plain, checked = loader(max(3, rounds // 3))
    print(f"StatefulDataLoader 2 workers, 10k items: plain {plain:.3f} s   checked {checked:.3f} s   "
          f"ratio {checked / plain:.2f} (goal <= 1.2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
