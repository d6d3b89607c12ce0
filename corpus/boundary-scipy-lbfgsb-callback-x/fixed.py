"""The callback keeps a copy of each iterate: the history shows the path to the minimum."""

import numpy as np
from scipy.optimize import minimize, rosen

history = []


def record(intermediate_result):
    history.append(intermediate_result.x.copy())


result = minimize(rosen, np.array([1.3, 0.7, 0.8, 1.9, 1.2]), method="L-BFGS-B", callback=record)
distinct = {tuple(x) for x in history}
print(f"{len(history)} iterations recorded, {len(distinct)} distinct points among them")
assert len(history) > 3 and len(distinct) == len(history)
assert np.linalg.norm(history[0] - result.x) > 1e-3  # the first iterate is not the solution
