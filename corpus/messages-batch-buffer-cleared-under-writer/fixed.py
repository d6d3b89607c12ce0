"""The fix the review asked for: the writer gets the pending list, the context starts a new one."""
import threading


class SaveContext:
    def __init__(self, db, batch_size=2):
        self.db, self.batch_size = db, batch_size
        self.pending, self.writers = [], []
        self.window = threading.Event()  # the database's commit window

    def _write(self, window, ops):
        window.wait(5)
        self.db.extend(ops)

    def save(self, sample):
        self.pending.append({"id": sample, "op": "set"})
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self):
        ops, self.pending = self.pending, []
        t = threading.Thread(target=self._write, args=(self.window, ops))
        t.start()
        self.writers.append(t)

    def close(self):
        self.window.set()
        for t in self.writers:
            t.join()


db = []
ctx = SaveContext(db)
for sample in range(4):
    ctx.save(sample)
ctx.close()
print("saved:", db)
assert sorted(op["id"] for op in db) == [0, 1, 2, 3], db  # the two writers commit in either order
