"""cloudpickle.loads resets an existing dynamic class (cloudpipe/cloudpickle#439, the issue's reproducer)."""

from cloudpickle import dumps, loads


class Klass:
    classvar = None


def mutator():
    Klass.classvar = 100


saved = dumps(Klass)
mutator()
print(f"before loads: Klass.classvar = {Klass.classvar}")
loads(saved)
print(f"after loads:  Klass.classvar = {Klass.classvar}")
assert Klass.classvar is None, "the bug did not reproduce"
