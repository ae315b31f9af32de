"""The patch series: export, apply, send."""
