"""An optimisation history kept from L-BFGS-B's callback: every entry is the solver's one working array."""

import numpy as np
from scipy.optimize import minimize, rosen

history = []


def record(intermediate_result):
    history.append(intermediate_result.x)  # L-BFGS-B's working array, updated in place by the next iteration


result = minimize(rosen, np.array([1.3, 0.7, 0.8, 1.9, 1.2]), method="L-BFGS-B", callback=record)
distinct = {tuple(x) for x in history}
print(f"{len(history)} iterations recorded, {len(distinct)} distinct points among them")
assert len(history) > 3 and len(distinct) == 1, "the bug did not reproduce"
