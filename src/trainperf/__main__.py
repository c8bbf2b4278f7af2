"""``python -m trainperf``: same as the ``trainperf`` command."""

import sys

from trainperf.cli import main

sys.exit(main())
