"""``python -m aliascheck``: the ``aliascheck`` command, with the interpreter of one's choice."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
