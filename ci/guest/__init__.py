"""The guest: its architectures and the QEMU runner."""
