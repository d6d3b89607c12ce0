"""pathos#184's worker as a coroutine: asyncio.gather collects every result before the caller reads
one, and every result is the one module-level list."""
import asyncio

shapes_to_display = []
products = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]


async def hay(i):
    await asyncio.sleep(0)  # the I/O a real worker awaits
    shapes_to_display.append([i, products[i]])
    return shapes_to_display


async def main():
    res = await asyncio.gather(*(hay(i) for i in range(len(products))))
    return res


res = asyncio.run(main())
print(f"the first result holds {len(res[0])} pairs")
assert res[0] is res[-1] and len(res[0]) == 10, "the bug did not reproduce"
