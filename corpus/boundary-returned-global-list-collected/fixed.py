"""uqfoundation/pathos#184's fix: the mapped function returns a new pair per item."""
from concurrent.futures import ThreadPoolExecutor

products = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]


def hay(i):
    product = products[i]
    return [i, product]


with ThreadPoolExecutor(max_workers=2) as pool:
    res = list(pool.map(hay, range(len(products))))

print(f"the results: {res[:3]}...")
assert res == [[i, i] for i in range(10)]
