"""__getstate__ returns a new dict (its list copied), __setstate__ updates: copy.copy() keeps what it copied."""

import copy


class Progress:
    """A training run's progress; `progress.val_loss` reads the last recorded metric."""

    def __init__(self):
        self.epoch, self.best, self.history = 0, float("inf"), []

    def record(self, epoch, val_loss):
        self.epoch, self.best = epoch, min(self.best, val_loss)
        self.history.append(val_loss)

    def __getattr__(self, name):  # only for names not in __dict__
        if name == "val_loss" and self.history:
            return self.history[-1]
        raise AttributeError(name)

    # Because __getattr__ is overridden, pickling and copying get explicit state methods.
    def __getstate__(self):
        return {**self.__dict__, "history": list(self.history)}

    def __setstate__(self, state):
        self.__dict__.update(state)


progress = Progress()
for epoch, loss in enumerate([0.9, 0.7, 0.6]):
    progress.record(epoch, loss)
before_tuning = copy.copy(progress)  # where to come back to if the tuning phase goes badly
for epoch, loss in enumerate([0.8, 1.1, 1.4], start=3):
    progress.record(epoch, loss)

print(f"kept: epoch {before_tuning.epoch}, last val_loss {before_tuning.val_loss}; expected epoch 2, 0.6")
assert (before_tuning.epoch, before_tuning.val_loss) == (2, 0.6)
