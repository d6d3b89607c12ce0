"""Each record is copied out of the read buffer: the kept records are the ones read."""

import io

import numpy as np

# a binary file of 5 fixed-size records, 4 int32 each: record i is [i, i, i, i]
payload = b"".join(np.full(4, i, dtype=np.int32).tobytes() for i in range(5))
stream = io.BytesIO(payload)

buf = bytearray(16)  # one record's worth, reused for every read
records = []
while stream.readinto(buf) == len(buf):
    records.append(np.frombuffer(buf, dtype=np.int32).copy())

firsts = [int(r[0]) for r in records]
print(f"first field of each record: {firsts}")
assert firsts == [0, 1, 2, 3, 4]
