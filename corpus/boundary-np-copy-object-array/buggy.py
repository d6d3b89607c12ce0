"""np.copy of an object array of per-sample lists: the 'copy' shares the lists, so augmenting it edits the originals."""

import numpy as np


def main():
    # variable-length token lists per sample, kept in an object array
    tokens = np.empty(3, dtype=object)
    tokens[:] = [[101, 7, 102], [101, 8, 9, 102], [101, 102]]

    augmented = np.copy(tokens)  # a new array; its elements are the same list objects
    for sample in augmented:
        sample.insert(1, 0)  # augmentation: a padding token after [CLS]

    print(f"original after augmenting the copy: {tokens.tolist()}")
    assert tokens[0] == [101, 0, 7, 102], "the bug did not reproduce"


if __name__ == "__main__":
    main()
