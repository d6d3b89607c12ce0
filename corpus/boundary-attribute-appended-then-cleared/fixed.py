"""StackOverflow 55897375's answer: ``lst = []`` binds a new list, ``lst.clear()`` empties the one the
container holds. The batcher hands the sink its batch and starts a new list."""


class LogBatcher:
    def __init__(self, sink, size=3):
        self.sink, self.size = sink, size
        self.pending = []

    def log(self, line):
        self.pending.append(line)
        if len(self.pending) >= self.size:
            self.flush()

    def flush(self):
        if self.pending:
            self.sink.append(self.pending)
            self.pending = []


sink = []
batcher = LogBatcher(sink)
for i in range(7):
    batcher.log(f"line {i}")
batcher.flush()
print("batches:", sink)
assert sink == [["line 0", "line 1", "line 2"], ["line 3", "line 4", "line 5"], ["line 6"]]
