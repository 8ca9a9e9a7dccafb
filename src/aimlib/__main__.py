"""``python -m aimlib``: the same program as the ``aimlib`` console script."""

import sys

from aimlib.cli import main

sys.exit(main())
