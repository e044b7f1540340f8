"""`python3 -m fuser.tools.bench`: the fuser-bench command."""

import sys

from fuser.tools.bench.cli import main

sys.exit(main())
