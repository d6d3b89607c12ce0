"""uqfoundation/pathos#184, in one process: the mapped function appends to a module-level list and
returns that list, so every result the pool collects is the same list (a thread pool here; the
report used a process pool, where each worker's copy grows the same way)."""
from concurrent.futures import ThreadPoolExecutor

shapes_to_display = []
products = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]


def hay(i):
    product = products[i]
    shapes_to_display.append([i, product])
    return shapes_to_display  # the one list, refilled by the next call


with ThreadPoolExecutor(max_workers=2) as pool:
    res = list(pool.map(hay, range(len(products))))

print(f"the first result: {res[0][:3]}... ({len(res[0])} pairs)")
assert res[0] is res[-1] and len(res[0]) == 10, "the bug did not reproduce"
