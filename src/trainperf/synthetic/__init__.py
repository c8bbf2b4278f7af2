"""Synthetic demo data, marked as such wherever it is shown.

* :mod:`~trainperf.synthetic.telemetry` DCGM telemetry of a 100 x 8 GPU cluster during an MLPerf run;
* :mod:`~trainperf.synthetic.slurm` a ten-month sacct history calibrated to published marginals
  (generator in :mod:`~trainperf.synthetic.slurm_history`, sacct text and JSON in
  :mod:`~trainperf.synthetic.slurm_sacct`);
* :mod:`~trainperf.synthetic.slurm_telemetry` GPU telemetry for one job of that history.
"""
