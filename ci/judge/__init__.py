"""The judges of guest runs: vmtest, bench, stress."""
