"""Building kernels and perf."""
