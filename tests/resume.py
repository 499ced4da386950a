"""Helpers of tests/test_resume.sh (run with /usr/bin/python3, which has h5py).

  resume.py kill FILE DATASET ROWS SECONDS -- CMD...
      Starts CMD (mpiexec and its ranks) in a session of its own, watches
      FILE until DATASET holds at least ROWS rows, then kills every process
      of the session with SIGKILL, as a crashed node would. Prints the rows
      seen. Exit 0 once killed; 3 if CMD ended first (too small a run to be
      killed part-way); 4 if ROWS never appeared within SECONDS.

  resume.py rows FILE DATASET
      Prints how many rows DATASET of FILE holds (of a slot table, with
      DATASET_marks beside it, how many are marked).

  resume.py compare CLEAN RESUMED [--attrs A,B] SPEC...
      SPEC is DATASET:KEY:FIELD,FIELD (KEY one field or F+G). RESUMED's
      DATASET must hold every key of CLEAN's once, none twice and none
      more, with the same FIELDS for each key; the root attributes A, B must
      be equal. Prints one line per SPEC; exit 1 on any difference.
"""
import ctypes
import os
import signal
import subprocess
import sys
import time

# The writer keeps the file open; read it without HDF5's file lock.
os.environ["HDF5_USE_FILE_LOCKING"] = "FALSE"
import h5py  # noqa: E402


def rows(path, dataset):
    """Rows of DATASET; of a slot table (DATASET_marks beside it), the
    marked ones."""
    with h5py.File(path, "r") as f:
        marks = dataset + "_marks"
        if marks in f:
            return int((f[marks][:] != 0).sum())
        return len(f[dataset])


def session(sid):
    """The process ids of session sid, from /proc."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as s:
                # pid (comm) state ppid pgrp session ...; comm may hold spaces
                fields = s.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:
            pids.append(int(name))
    return pids


def kill(path, dataset, want, seconds, cmd):
    # Orphaned ranks become our children (PR_SET_CHILD_SUBREAPER), so that
    # every killed process can be waited for before the rerun starts.
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    proc = subprocess.Popen(cmd, start_new_session=True)
    deadline = time.monotonic() + seconds
    seen = 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            print(f"resume.py: {cmd[0]} ended (status {proc.returncode}) before "
                  f"{path}:{dataset} held {want} rows; it saw {seen}")
            return 3
        try:
            seen = rows(path, dataset)
        except Exception:  # absent, or caught mid-write: look again
            pass
        if seen >= want:
            break
        time.sleep(0.02)
    victims = session(proc.pid)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    if seen < want:
        print(f"resume.py: {path}:{dataset} held {seen} rows after {seconds} s; killed")
        return 4
    print(f"resume.py: killed {len(victims)} processes once {path}:{dataset} held {seen} rows")
    return 0


def table(f, spec):
    dataset, key, fields = spec.split(":")
    keys = key.split("+")
    fields = fields.split(",")
    d = f[dataset][:]
    out = {}
    dups = 0
    for r in d:
        k = tuple(int(r[x]) for x in keys)
        if k in out:
            dups += 1
        out[k] = tuple(r[x] for x in fields)
    return dataset, out, dups, len(d)


def compare(clean, resumed, specs, attrs):
    bad = 0
    with h5py.File(clean, "r") as a, h5py.File(resumed, "r") as b:
        for name in attrs:
            if a.attrs[name] != b.attrs[name]:
                print(f"attribute {name}: {a.attrs[name]} clean, {b.attrs[name]} resumed")
                bad += 1
        for spec in specs:
            name, ta, _, _ = table(a, spec)
            _, tb, dups, n = table(b, spec)
            lost = [k for k in ta if k not in tb]
            extra = [k for k in tb if k not in ta]
            differ = [k for k in ta if k in tb and ta[k] != tb[k]]
            line = (f"{name}: {len(ta)} rows clean, {n} resumed; {len(lost)} lost, "
                    f"{dups} duplicated, {len(extra)} unknown, {len(differ)} differ")
            print(line)
            for k in (lost + extra + differ)[:5]:
                print("  e.g.", k, ta.get(k), tb.get(k))
            bad += len(lost) + dups + len(extra) + len(differ) + (n != len(ta))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 7 and argv[0] == "kill" and argv[5] == "--":
        return kill(argv[1], argv[2], int(argv[3]), float(argv[4]), argv[6:])
    if len(argv) == 3 and argv[0] == "rows":
        print(rows(argv[1], argv[2]))
        return 0
    if len(argv) >= 4 and argv[0] == "compare":
        attrs, specs = [], []
        rest = argv[3:]
        while rest:
            if rest[0] == "--attrs" and len(rest) > 1:
                attrs = rest[1].split(",")
                rest = rest[2:]
            else:
                specs.append(rest[0])
                rest = rest[1:]
        return compare(argv[1], argv[2], specs, attrs)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
