"""copy.deepcopy of the object array: augmenting the copy leaves the original samples alone."""

import copy

import numpy as np


def main():
    tokens = np.empty(3, dtype=object)
    tokens[:] = [[101, 7, 102], [101, 8, 9, 102], [101, 102]]

    augmented = copy.deepcopy(tokens)  # the numpy.copy docs' own advice for object arrays
    for sample in augmented:
        sample.insert(1, 0)

    print(f"original after augmenting the copy: {tokens.tolist()}")
    assert tokens.tolist() == [[101, 7, 102], [101, 8, 9, 102], [101, 102]]
    assert augmented[0] == [101, 0, 7, 102]


if __name__ == "__main__":
    main()
