"""A transaction class in the shape python-bitcoin-utils#9 reports: inputs=[] and outputs=[] are
evaluated once, so every Transaction made without them keeps the same two lists. Adding an input to
the first transaction adds it to the second."""


class TxInput:
    def __init__(self, txid, index):
        self.txid, self.index = txid, index


class Transaction:
    def __init__(self, inputs=[], outputs=[], locktime=0):  # noqa: B006 - the bug itself
        self.inputs = inputs
        self.outputs = outputs
        self.locktime = locktime

    def add_input(self, txin):
        self.inputs.append(txin)


payment = Transaction()
payment.add_input(TxInput("a1b2", 0))
refund = Transaction()  # a new, empty transaction, the caller thinks
refund.add_input(TxInput("c3d4", 1))
print(f"payment spends {[i.txid for i in payment.inputs]}, refund spends {[i.txid for i in refund.inputs]}")
assert [i.txid for i in payment.inputs] == ["a1b2", "c3d4"], "the bug did not reproduce"
