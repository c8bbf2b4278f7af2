"""``python -m trainperf`` is the ``trainperf`` command."""

import sys

from trainperf.report.cli import main

sys.exit(main())
