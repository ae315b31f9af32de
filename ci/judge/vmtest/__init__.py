"""Host side of make vmtest: turn the guest's logs into a verdict."""
