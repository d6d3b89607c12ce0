"""Correct: a row is appended to the table first and filled afterwards.

Why a naive detector would flag it: `row` is handed to `rows.append(row)` and changes
afterwards, so "a kept mutable object changed after the handover" fires. But the
project owns both sides: the table is meant to hold the live row, and filling it after
the append is the intended way to build it. No library keeps it, nothing expects a
snapshot, and the final table is exactly what the code means.
"""


def main():
    rows = []
    for i in range(3):
        row = []
        rows.append(row)  # the table holds the row it will fill
        for j in range(3):
            row.append(i * 3 + j)
    print(rows)
    assert rows == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


if __name__ == "__main__":
    main()
