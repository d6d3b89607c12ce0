"""Correct: a solver returns its working array after its last update, and the caller keeps it.

Why a naive detector would flag it: `solve()` updates `x` in place on every iteration
and hands that very array out; the caller keeps it. But the handover happens after the
last in-place update, and nothing changes the array afterwards: the kept result is the
solution, not a live view of a still-running computation (contrast scipy L-BFGS-B's
callback, which is handed the array while the solver goes on using it).
"""

import numpy as np


def solve(a, b, steps=200, lr=0.1):
    """Minimise ||a x - b||^2 by gradient descent; x is updated in place."""
    x = np.zeros(a.shape[1])
    for _ in range(steps):
        x -= lr * a.T @ (a @ x - b)
    return x  # handed out after the last change


def main():
    a = np.array([[2.0, 0.0], [0.0, 1.0]])
    b = np.array([2.0, 3.0])
    results = {name: solve(a, b) for name in ("first", "second")}  # kept; each call makes a new array
    print(results)
    assert results["first"] is not results["second"]
    assert np.allclose(results["first"], [1.0, 3.0], atol=1e-6) and np.array_equal(results["first"], results["second"])


if __name__ == "__main__":
    main()
