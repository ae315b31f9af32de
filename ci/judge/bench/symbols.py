"""fallbacks.txt: the kernel paths of the deferred modes' samples that
fell back to an in-place walk, named with the kernel's System.map."""
import bisect


def read_system_map(path):
    """Sorted (address, name) of the text symbols of a System.map."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return syms


def symbolize(addr, syms):
    """name+0xoff of addr, or its hex without a symbol."""
    i = bisect.bisect_right(syms, (addr, "\uffff")) - 1
    if i < 0 or not syms:
        return f"{addr:#x}"
    return f"{syms[i][1]}+{addr - syms[i][0]:#x}"


def fallback_report(parsed, syms):
    """Text of fallbacks.txt: per workload and K, the kernel paths of the
    samples unwound in place in the deferred modes, most frequent first."""
    groups = {}
    for f in parsed.get("fallbacks", []):
        key = (f["workload"], int(f["k"]), f["mode"])
        path = tuple(int(a, 16) for a in str(f["kernel"]).split(",") if a)
        g = groups.setdefault(key, {})
        g[path] = g.get(path, 0) + int(f["samples"])
    if not groups:
        return "no sample of a deferred mode was unwound in place\n"
    out = []
    for key in sorted(groups):
        g = groups[key]
        out.append(f"{key[0]} K={key[1]} {key[2]}: "
                   f"{sum(g.values())} samples in the top paths of each run")
        for path, n in sorted(g.items(), key=lambda x: -x[1]):
            names = " <- ".join(symbolize(a, syms) if syms else f"{a:#x}"
                                for a in path)
            out.append(f"  {n:6d}  {names}")
    return "\n".join(out) + "\n"
