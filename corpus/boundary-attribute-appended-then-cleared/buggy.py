"""StackOverflow 55897375: "list.clear() removes its entries and also the entries I used to append its
data" (``container.append(list); list.clear()``). Here a log batcher appends its pending list to the
sink at each flush and clears it for the next batch: every batch in the sink is the one live list."""


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
            self.pending.clear()


sink = []
batcher = LogBatcher(sink)
for i in range(7):
    batcher.log(f"line {i}")
batcher.flush()
print("batches:", sink)
assert sink[0] is sink[2] and sink[0] == [], "the bug did not reproduce"
