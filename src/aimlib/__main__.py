"""``python -m aimlib``: the same program as the ``aimlib`` console script."""

import sys

from .cli import main

sys.exit(main())
