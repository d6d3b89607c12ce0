"""Each record's bytes copied out of the buffer readinto() refills: every kept record is its own."""

import io

payload = b"".join(bytes([i]) * 4 for i in range(5))
stream = io.BytesIO(payload)

buf = bytearray(4)
records = []
while True:
    n = stream.readinto(buf)
    if not n:
        break
    records.append(bytes(buf[:n]))  # a copy of the bytes read

firsts = [r[0] for r in records]
print(f"first byte of each record: {firsts}")
assert firsts == [0, 1, 2, 3, 4]
