"""``python -m trainperf.report.batch``: the batch command line."""

import sys

from trainperf.report.batch.cli import main

sys.exit(main())
