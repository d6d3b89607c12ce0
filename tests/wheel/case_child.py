"""A finding made in a child process (a subprocess running this interpreter).

The child records only if the wheel installed the aliascheck-child.pth startup hook: this test
must fail under --aliascheck, naming the child's pid.
"""

import subprocess
import sys
from pathlib import Path


def test_child_process():
    subprocess.run([sys.executable, str(Path(__file__).with_name("child_job.py"))], check=True)
