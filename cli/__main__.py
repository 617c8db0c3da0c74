"""`python -m cli ARGS` is `citewise ARGS`."""

import sys

from cli import main

sys.exit(main())
