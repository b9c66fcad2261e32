"""`python -m litebert ARGS`: the `litebert` command, where its script is not on PATH."""

import sys

from litebert.cli import main

if __name__ == "__main__":
    sys.exit(main())
