"""A round trip in this process passes; a worker process rebuilds another class (cloudpipe/cloudpickle#313)."""

import subprocess
import sys

import cloudpickle

WORKER = "import sys, cloudpickle; print(cloudpickle.loads(sys.stdin.buffer.read()).batch_size)"


class Settings:
    batch_size = 32


payload = cloudpickle.dumps(Settings)  # pickled when the job is built, sent to a worker process later
Settings.batch_size = 64  # the driver is reconfigured afterwards

# The usual test, a round trip in this process, returns the live class itself: it passes.
assert cloudpickle.loads(cloudpickle.dumps(Settings)) is Settings and Settings.batch_size == 64

worker = subprocess.run([sys.executable, "-c", WORKER], input=payload, capture_output=True, check=True)
seen = int(worker.stdout)
print(f"the driver uses batch_size {Settings.batch_size}, a worker process gets {seen}")
assert seen == 32, "the bug did not reproduce"
