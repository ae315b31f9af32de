#!/bin/bash
# perf.evsel() calls that fail in __init__, with the perf.so in $1's directory.
d=$(dirname "$1")
for call in "perf.evsel(no_such_attr_bit=1)" "perf.evsel(sample_freq=1, sample_period=1)"; do
	out=$(PYTHONPATH=$d /usr/bin/python3 -c "
import perf
try:
    $call
    print('accepted')
except Exception as e:
    print(type(e).__name__ + ': ' + str(e))
" 2>&1)
	rc=$?
	[ $rc -ge 128 ] && out="killed by signal $((rc - 128))"
	echo "$call: $out"
done
