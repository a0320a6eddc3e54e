"""Target for `scry run`: prints its arguments as JSON and exits at once (too short to sample)."""

import json
import sys

print(json.dumps(sys.argv))
