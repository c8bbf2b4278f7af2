"""PyTorch profiler (Kineto) traces: placeholder, filled in below."""
