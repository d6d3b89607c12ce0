"""Records kept as memoryview slices of the one buffer readinto() refills: every kept record reads as the last one."""

import io

# a binary file of 5 fixed-size records of 4 bytes: record i is four bytes of value i
payload = b"".join(bytes([i]) * 4 for i in range(5))
stream = io.BytesIO(payload)

buf = bytearray(4)  # one record's worth, reused for every read
records = []
while True:
    n = stream.readinto(buf)
    if not n:
        break
    records.append(memoryview(buf)[:n])  # zero-copy: a view of buf, refilled by the next read

firsts = [r[0] for r in records]
print(f"first byte of each record: {firsts}")
assert firsts == [4] * 5, "the bug did not reproduce"
