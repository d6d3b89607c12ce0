"""Correct: a dict is serialised with json.dumps and changed afterwards.

Why a naive detector would flag it: `state` is handed to a library call and then
mutated. But json.dumps returns an immutable str built from the values at call time;
it keeps no reference to `state`, so later changes cannot reach the payload. The kept
payloads record each state as it was.
"""

import json


def main():
    state = {"step": 0, "losses": []}
    payloads = []
    for step in range(1, 4):
        state["step"] = step
        state["losses"].append(1.0 / step)
        payloads.append(json.dumps(state))  # a snapshot as text
    print(payloads)
    assert [json.loads(p)["step"] for p in payloads] == [1, 2, 3]
    assert json.loads(payloads[0])["losses"] == [1.0]


if __name__ == "__main__":
    main()
