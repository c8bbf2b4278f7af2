"""Tools that run on a GPU node (``pip install -e '.[gpu]'`` there), not part of the report.

* :mod:`~trainperf.capture.collect` samples NVML/GPM counters as dcgm-exporter text while a command runs
  (``python -m trainperf.capture.collect``): the scrape loop and command line; the fields it
  writes and their NVML sources in :mod:`~trainperf.capture.fields`, the NVML reader in
  :mod:`~trainperf.capture.nvml`, the exposition text in :mod:`~trainperf.capture.render`;
* :mod:`~trainperf.capture.smoke` a small GPT training run that logs MLPerf events
  (``python -m trainperf.capture.smoke``);
* :mod:`~trainperf.capture.parallel` the same GPT with tensor, pipeline and data parallelism,
  one profiler trace per rank (``python -m trainperf.capture.parallel``);
* :mod:`~trainperf.capture.profile` the ``torch.profiler`` schedule the two use.
"""
