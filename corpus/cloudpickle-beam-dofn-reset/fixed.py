"""The worker loads with aliascheck.fixes.cloudpickle.loads: the second bundle keeps the loaded model."""

import cloudpickle

from aliascheck.fixes.cloudpickle import loads


def make_dofn():
    class EnrichFn:
        """A DoFn-like class: setup() loads a model once per process into a class attribute."""

        model = None

        def setup(self):
            if EnrichFn.model is None:
                EnrichFn.model = {"weights": [0.5, 0.25]}  # stands for an expensive load

        def process(self, x):
            return [w * x for w in EnrichFn.model["weights"]]

    return EnrichFn()


payload = cloudpickle.dumps(make_dofn())  # what the pipeline ships to its workers

bundle_one = loads(payload)  # the worker, first bundle
bundle_one.setup()
print(bundle_one.process(2))
bundle_two = loads(payload)  # second bundle: the class is found and left as it is
print(f"model after the second bundle's load: {type(bundle_two).model}")
assert type(bundle_one) is type(bundle_two) and type(bundle_two).model is not None
