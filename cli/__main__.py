"""`python -m cli ARGS` is `citewise ARGS`. (Worker processes re-import this module by path,
under another name: the guard keeps them from running a command.)"""

import sys

from cli import main

if __name__ == "__main__":
    sys.exit(main())
