"""Synthetic demo data, marked as such wherever it is shown.

* :mod:`~trainperf.synthetic.telemetry` DCGM telemetry of a 100 x 8 GPU cluster during an MLPerf run;
* :mod:`~trainperf.synthetic.slurm` a nine-month sacct history calibrated to published marginals.
"""
