"""The pytest test that replays a failing schedule with plain calls: what ``--explore`` prints.

``aliascheck check`` prints it after the minimal failing schedule and puts it in the
JSON report (``snippet``); a sweep does the same for each class (:mod:`aliascheck.sweep`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .check import Schedule, Target

SNIPPET = '''\
# aliascheck: the minimal failing schedule for {spec}
# rerun it:  {rerun}
from itertools import islice

import pytest

from aliascheck.check import shutdown
from aliascheck.diff import show
from aliascheck.fingerprint import fingerprint
{imports}


@pytest.fixture
def build():
    built = []
    yield lambda: built.append({call}) or built[-1]
    for node in built:
        shutdown(node)  # torchdata joins its worker threads only in __del__


def test_{test}_resumes(aliascheck, build):
    node = build()
{start}    kept, items = {{}}, []
    for step in range({length}):
        if step in {snaps}:
            kept[step] = node.state_dict()
        items.append(fingerprint(next({it})))
    aliascheck.check_node(node, steps=0)  # re-verify the kept snapshots now: findings fail the test
    for step, state in kept.items():
        fresh = build()
        fresh.{restore}(state)
        again = [fingerprint(x) for x in islice({fresh}, len(items) - step)]
        aliascheck.check_node(fresh, steps=0)  # while the snapshot is held: did the restore write into it?
        shown = [[show(fp.shadow()) for fp in fps] for fps in (again, items[step:])]
        assert again == items[step:], f"restored from the snapshot after {{step}} items: {{shown[0]}} != {{shown[1]}}"
'''


def snippet(target: Target, schedule: Schedule) -> str:
    """A pytest test that replays *schedule* with plain calls (and the ``aliascheck`` fixture)."""
    module, _, name = target.spec.partition(":")
    steps_itself = target.style.steps_itself
    rerun = f'aliascheck check {target.spec} --schedule "{schedule}"'
    if target.render is not None:  # a class the sweep built: its knobs pick construction arguments
        lines, call = target.render(dict(schedule.knobs))
        rerun = f'aliascheck check {module} --only {name} --schedule "{schedule}"'
    else:
        lines = [f"from {module} import {name.split('.')[0]}"]
        call = f"{name}({', '.join(f'{k}={v}' for k, v in schedule.knobs)})"
    return SNIPPET.format(
        spec=target.spec, schedule=schedule, rerun=rerun, imports="\n".join(lines), call=call,
        test=name.replace(".", "_"),
        start="" if steps_itself else "    it = iter(node)\n", it="node" if steps_itself else "it",
        length=schedule.snaps[-1] + schedule.ahead, snaps=schedule.snaps, restore=target.style.restore,
        fresh="fresh" if steps_itself else "iter(fresh)",
    )
