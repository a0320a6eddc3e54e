"""python -m scry ...: the same as the `scry` command."""

import sys

from scry._cli import main

sys.exit(main("python -m scry"))
