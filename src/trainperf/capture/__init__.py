"""Tools that run on a GPU node (``pip install -e '.[gpu]'`` there), not part of the report.

* :mod:`~trainperf.capture.collect` samples NVML/GPM counters as dcgm-exporter text while a command runs
  (``python -m trainperf.capture.collect``);
* :mod:`~trainperf.capture.smoke` a small GPT training run that logs MLPerf events
  (``python -m trainperf.capture.smoke``).
"""
