"""The buffer readinto() refills kept itself at each read: the list holds one bytearray five times."""

import io

payload = b"".join(bytes([i]) * 4 for i in range(5))
stream = io.BytesIO(payload)

buf = bytearray(4)
records = []
while stream.readinto(buf) == len(buf):
    records.append(buf)  # the same object at every position

firsts = [r[0] for r in records]
print(f"first byte of each record: {firsts}")
assert firsts == [4] * 5, "the bug did not reproduce"
