"""The harness: one Python package (python3 -m ci.<job>.<module> from the checkout's root)."""
