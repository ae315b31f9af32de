"""make realstacks, the host side: each system call entry of a real
program, as the kernel unwound it (perf's deferred record, or its chain
unwound in place), against glibc's backtrace() of the same call taken by
an LD_PRELOAD shim (selftests/realstacks/), and the table of shares
(doc/realstacks.md)."""
