"""fiftyone's SaveContext moved to a background writer (review of PR 6389): the pending ops are
shared by the writer and the main thread, so ops are lost. Here the context gives the writer thread
its live `pending` list and clears it for the next batch; the writer waits for the commit window
(an Event the context opens at close, no sleeps) and saves an empty list."""
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
        t = threading.Thread(target=self._write, args=(self.window, self.pending))
        t.start()
        self.writers.append(t)
        self.pending.clear()

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
assert db == [], "the bug did not reproduce"
