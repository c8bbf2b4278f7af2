"""``python -m trainperf`` is the ``trainperf`` command."""

import sys

from trainperf.report.cli import main

rc = main()
if rc == 130:  # interrupted: the workers are stopped and what finished is recorded
    from trainperf.report.schedule import exit_process

    exit_process(rc)
sys.exit(rc)
