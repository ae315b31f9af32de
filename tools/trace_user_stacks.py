#!/usr/bin/env python3
"""Print each event of a trace-cmd recording with its deferred user stack.

With the tracefs option userstacktrace_delay, an event recorded in a user
task is followed in its CPU's buffer by a user_unwind_cookie event, and
the user stack comes later, in a user_unwind_stack event with the same
cookie, written when the task returned to user space (on whichever CPU
that was). trace-cmd report prints the three apart. This prints each
event once, with the frames of its stack under it, named by the function
symbols of the file each frame is in: the stack event gives per frame the
offset in the file, its inode and its device, so the recording's own
machine need not be asked for the process's mappings.

usage: trace_user_stacks.py [-i trace.dat | --report FILE] [--files FILE]
                            [--search DIR ...] [--symfs DIR]
                            [--trace-cmd PATH]

  -i FILE       the recording; trace-cmd report reads it (default
                trace.dat)
  --report FILE the text trace-cmd report printed, instead of running it
                ("-" for standard input)
  --files FILE  lines "DEV INODE PATH" naming the files of the recording's
                machine (DEV the kernel's dev_t, major << 20 | minor, as
                the stack events hold it)
  --search DIR  name files by stat()ing every file under DIR: for a
                recording made on this machine
  --symfs DIR   open the files named by --files under DIR (a copy of the
                recording machine's files)

A frame whose file is not known is printed with its offset, inode and
device; an event whose stack never came (the task was killed, the stack
event was lost) says so. Exit status 0, 2 on bad input.
"""
import argparse
import bisect
import os
import re
import struct
import subprocess
import sys

LINE = re.compile(
    r"^\s*(?P<comm>.*)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
    r"(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s*(?P<fields>.*)$")
NO_MAPPING, NOT_LOOKED_UP = 2**64 - 1, 2**64 - 2


class Error(Exception):
    pass


def field(fields, name):
    m = re.search(r"(?:^| )%s=([0-9a-fA-F]+)(?: |$)" % name, fields)
    return int(m.group(1), 16) if m else None


def array(fields, name):
    """libtraceevent prints __print_array() as decimal numbers apart by
    spaces (trace-cmd report), the kernel's trace file as {0x..,0x..}."""
    m = re.search(r"(?:^| )%s=\{([^}]*)\}" % name, fields)
    if m:
        return [int(x, 0) for x in m.group(1).split(",") if x.strip()]
    m = re.search(r"(?:^| )%s=(\d+(?: \d+)*)(?: |$)" % name, fields)
    return [int(x) for x in m.group(1).split()] if m else None


def parse(text):
    """The report's event lines, as dicts with the line itself."""
    out = []
    for raw in text.splitlines():
        m = LINE.match(raw)
        if m:
            d = m.groupdict()
            d["cpu"], d["pid"], d["line"] = int(d["cpu"]), int(d["pid"]), raw
            out.append(d)
    return out


def merge(lines):
    """(event line, cookie or None, stack dict or None) per traced event.

    A cookie belongs to the line before it in its CPU's buffer, of the
    same task; a stack event to every event that announced its cookie."""
    stacks, events, last = {}, [], {}
    for d in lines:
        if d["event"] == "user_unwind_stack":
            c = field(d["fields"], "cookie")
            st = {k: array(d["fields"], k)
                  for k in ("stack", "inodes", "dev", "ips")}
            if c is not None and None not in st.values():
                stacks.setdefault(c, st)
        elif d["event"] == "user_unwind_cookie":
            e = last.get(d["cpu"])
            if e is not None and e[0]["pid"] == d["pid"] and e[1] is None:
                e[1] = field(d["fields"], "cookie")
        else:
            e = [d, None]
            events.append(e)
            last[d["cpu"]] = e
            continue
        last[d["cpu"]] = None
    return [(d, c, stacks.get(c) if c is not None else None)
            for d, c in events]


class Elf:
    """The function symbols of an ELF file, by offset in the file."""

    def __init__(self, path):
        with open(path, "rb") as fh:
            data = fh.read()
        if data[:4] != b"\x7fELF":
            raise Error(f"{path}: not an ELF file")
        is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
        if is64:
            (phoff, shoff) = struct.unpack_from(end + "QQ", data, 0x20)
            (phent, phnum, shent, shnum) = struct.unpack_from(
                end + "HHHH", data, 0x36)
        else:
            (phoff, shoff) = struct.unpack_from(end + "II", data, 0x1c)
            (phent, phnum, shent, shnum) = struct.unpack_from(
                end + "HHHH", data, 0x2a)
        loads = []
        for i in range(phnum):
            o = phoff + i * phent
            if is64:
                t, _, off, vaddr, _, filesz = struct.unpack_from(
                    end + "IIQQQQ", data, o)
            else:
                t, off, vaddr, _, filesz = struct.unpack_from(
                    end + "IIIII", data, o)
            if t == 1:  # PT_LOAD
                loads.append((vaddr, off, filesz))
        secs = []
        for i in range(shnum):
            o = shoff + i * shent
            if is64:
                s = struct.unpack_from(end + "IIQQQQIIQQ", data, o)
            else:
                s = struct.unpack_from(end + "IIIIIIIIII", data, o)
            secs.append(s)
        syms = []
        for s in secs:
            if s[1] not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
                continue
            off, size, link, entsize = s[4], s[5], s[6], s[9]
            stroff = secs[link][4]
            for k in range(size // entsize if entsize else 0):
                o = off + k * entsize
                if is64:
                    name, info, _, _, value, ssize = struct.unpack_from(
                        end + "IBBHQQ", data, o)
                else:
                    name, value, ssize, info, _, _ = struct.unpack_from(
                        end + "IIIBBH", data, o)
                if info & 0xf != 2 or not value:  # STT_FUNC
                    continue
                for vaddr, foff, filesz in loads:
                    if vaddr <= value < vaddr + filesz:
                        nend = data.index(b"\0", stroff + name)
                        syms.append((value - vaddr + foff, ssize,
                                     data[stroff + name:nend].decode(
                                         errors="replace")))
                        break
        syms.sort()
        self.syms, self.starts = syms, [s[0] for s in syms]

    def name(self, offset):
        i = bisect.bisect_right(self.starts, offset) - 1
        while i >= 0:
            start, size, name = self.syms[i]
            if start <= offset < start + max(size, 1):
                return f"{name}+{offset - start:#x}"
            if start < offset - (1 << 20):
                break
            i -= 1
        return None


class Files:
    """(dev, inode) -> path, and the symbols of each file, opened once."""

    def __init__(self, names, symfs):
        self.names, self.symfs, self.elf = names, symfs, {}

    def symbolize(self, offset, inode, dev):
        path = self.names.get((dev, inode))
        if path is None:
            return None, None
        if path not in self.elf:
            try:
                self.elf[path] = Elf(self.symfs + path if self.symfs
                                     else path)
            except (OSError, Error, struct.error, ValueError, IndexError):
                self.elf[path] = None
        e = self.elf[path]
        return path, e.name(offset) if e else None


def read_files(path):
    names = {}
    with open(path) as fh:
        for n, raw in enumerate(fh, 1):
            parts = raw.split(None, 2)
            if not raw.strip() or raw.startswith("#"):
                continue
            if len(parts) != 3 or not parts[0].isdigit() or \
                    not parts[1].isdigit():
                raise Error(f"{path}:{n}: want \"DEV INODE PATH\", "
                            f"got {raw.strip()!r}")
            names[(int(parts[0]), int(parts[1]))] = parts[2].strip()
    return names


def search(dirs):
    names = {}
    for top in dirs:
        if not os.path.isdir(top):
            raise Error(f"--search {top}: not a directory")
        for d, _, files in os.walk(top):
            for f in files:
                p = os.path.join(d, f)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                dev = os.major(st.st_dev) << 20 | os.minor(st.st_dev)
                names.setdefault((dev, st.st_ino), p)
    return names


def frame_text(files, off, inode, dev, ip):
    if inode in (NO_MAPPING, 0xffffffff):
        return f"{ip:16x} [no mapping]"
    if inode in (NOT_LOOKED_UP, 0xfffffffe):
        return f"{ip:16x} [mappings not looked at]"
    if inode == 0:
        return f"{ip:16x} [anonymous]"
    path, name = files.symbolize(off, inode, dev)
    where = path or f"inode {inode} dev {dev >> 20}:{dev & 0xfffff}"
    return f"{ip:16x} {name or f'[{off:#x}]'} ({where})"


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="each event of a trace-cmd recording with its "
                    "deferred user stack (userstacktrace_delay)")
    ap.add_argument("-i", dest="input", default="trace.dat")
    ap.add_argument("--report")
    ap.add_argument("--files")
    ap.add_argument("--search", action="append", default=[])
    ap.add_argument("--symfs", default="")
    ap.add_argument("--trace-cmd", default="trace-cmd")
    a = ap.parse_args(argv)
    try:
        if a.report == "-":
            text = sys.stdin.read()
        elif a.report:
            with open(a.report) as fh:
                text = fh.read()
        else:
            if not os.path.isfile(a.input):
                raise Error(f"{a.input}: no such recording (trace-cmd "
                            "record -O userstacktrace_delay writes one)")
            try:
                p = subprocess.run([a.trace_cmd, "report", "-i", a.input],
                                   capture_output=True, text=True)
            except OSError as e:
                raise Error(f"{a.trace_cmd}: {e.strerror} (install "
                            "trace-cmd, or give --trace-cmd PATH)")
            if p.returncode:
                raise Error(f"trace-cmd report -i {a.input} failed: "
                            f"{p.stderr.strip()}")
            text = p.stdout
        names = read_files(a.files) if a.files else {}
        names.update(search(a.search))
    except (OSError, Error) as e:
        print(f"trace_user_stacks: {e}", file=sys.stderr)
        return 2
    files = Files(names, a.symfs.rstrip("/"))
    for d, cookie, st in merge(parse(text)):
        print(d["line"])
        if cookie is None:
            continue
        if st is None:
            print(f"\t(cookie {cookie:x}: no user stack came)")
            continue
        for off, inode, dev, ip in zip(st["stack"], st["inodes"],
                                       st["dev"], st["ips"]):
            print("\t" + frame_text(files, off, inode, dev, ip))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
