"""aliascheck.fixes.cloudpickle.loads: an existing class keeps its attributes; identity is cloudpickle's."""

from cloudpickle import dumps

from aliascheck.fixes.cloudpickle import loads


class Klass:
    classvar = None


def mutator():
    Klass.classvar = 100


saved = dumps(Klass)
mutator()
print(f"before loads: Klass.classvar = {Klass.classvar}")
assert loads(saved) is Klass
print(f"after loads:  Klass.classvar = {Klass.classvar}")
assert Klass.classvar == 100
