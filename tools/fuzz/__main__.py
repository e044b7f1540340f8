"""`python3 -m fuser.tools.fuzz`: the fuser-fuzz command."""

import sys

from fuser.tools.fuzz.cli import main

sys.exit(main())
