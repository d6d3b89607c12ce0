"""The fix python-bitcoin-utils#9 asks for: None defaults, and new lists in each call that omits them."""


class TxInput:
    def __init__(self, txid, index):
        self.txid, self.index = txid, index


class Transaction:
    def __init__(self, inputs=None, outputs=None, locktime=0):
        self.inputs = [] if inputs is None else inputs
        self.outputs = [] if outputs is None else outputs
        self.locktime = locktime

    def add_input(self, txin):
        self.inputs.append(txin)


payment = Transaction()
payment.add_input(TxInput("a1b2", 0))
refund = Transaction()
refund.add_input(TxInput("c3d4", 1))
print(f"payment spends {[i.txid for i in payment.inputs]}, refund spends {[i.txid for i in refund.inputs]}")
assert [i.txid for i in payment.inputs] == ["a1b2"]
