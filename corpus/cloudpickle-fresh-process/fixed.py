"""The payload is pickled when it is sent, after the configuration: the worker gets the class as it is here."""

import subprocess
import sys

import cloudpickle

WORKER = "import sys, cloudpickle; print(cloudpickle.loads(sys.stdin.buffer.read()).batch_size)"


class Settings:
    batch_size = 32


Settings.batch_size = 64  # the driver is configured first
payload = cloudpickle.dumps(Settings)  # then the job is pickled and sent

assert cloudpickle.loads(cloudpickle.dumps(Settings)) is Settings and Settings.batch_size == 64

worker = subprocess.run([sys.executable, "-c", WORKER], input=payload, capture_output=True, check=True)
seen = int(worker.stdout)
print(f"the driver uses batch_size {Settings.batch_size}, a worker process gets {seen}")
assert seen == 64
