"""The 'tag key=value ...' lines guest programs print for the host
(make bench's bench-*, make stress's stress-*)."""
import re


def fields(line):
    """'tag a=1 b=x' -> {'a': 1, 'b': 'x'} (integers as int)."""
    out = {}
    for word in line.split()[1:]:
        key, _, val = word.partition("=")
        out[key] = int(val) if re.fullmatch(r"-?\d+", val) else val
    return out
