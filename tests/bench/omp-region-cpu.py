#!/usr/bin/python3
"""omp-region-cpu.py — the table of tests/bench/omp-region-cpu.c's records.

    tests/bench/omp-region-cpu.py STEPS ONE.txt TWO.txt [TWO.txt...]

ONE.txt is a run at 1 thread, each TWO.txt one at N threads, of the same
kernel with STEPS calls (warm-up included).  Per kernel helper (the
outlined functions of one C function added; the generated program's own
element-wise maps as "maps"), per step, in ms: the regions, the 1-thread
CPU time, then for each N-thread run the CPU time of all threads and of
the busiest thread, and at the end the sums.  CPU times do not count the
time a thread waits for a core, so they compare runs made under
different loads; the busiest thread's time is a lower bound of the wall
time, and (all threads - 1 thread) is work the other threads add.
(docs/performance.md, "Where resnet18's training step goes at 2 threads".)
"""
import bisect
import collections
import re
import subprocess
import sys

_symbols = {}


def symbols(obj):
    if obj not in _symbols:
        out = subprocess.run(['nm', '-n', '--defined-only', obj],
                             capture_output=True, text=True).stdout
        addr, name = [], []
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in 'tT':
                addr.append(int(p[0], 16))
                name.append(p[2])
        _symbols[obj] = (addr, name)
    return _symbols[obj]


def helper(obj, off):
    addr, name = symbols(obj)
    i = bisect.bisect_right(addr, off) - 1
    if i < 0:
        return '?'
    n = re.sub(r'\._omp_fn\.\d+$', '', name[i])
    # the generated program's own functions (entry point and its parts)
    return n if n.startswith('weir_') else 'maps'


def load(path, steps):
    d = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for line in open(path):
        obj, off, calls, _wall, cpu_sum, cpu_max, _nt = line.split()
        if not obj.startswith('/'):
            continue
        v = d[helper(obj, int(off, 16))]
        v[0] += int(calls) / steps
        v[1] += float(cpu_sum) / steps * 1e3
        v[2] += float(cpu_max) / steps * 1e3
    return d


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    steps = float(sys.argv[1])
    one = load(sys.argv[2], steps)
    many = [load(p, steps) for p in sys.argv[3:]]
    keys = sorted(set(one) | set().union(*many), key=lambda k: -one[k][1])
    print('| helper | regions | 1 thread | ' +
          ' | '.join('run %d all / busiest' % (i + 1)
                     for i in range(len(many))) + ' |')
    print('|---|---|---|' + '---|' * len(many))
    for k in keys:
        print('| %s | %.0f | %.2f | %s |' % (
            k, one[k][0], one[k][1],
            ' | '.join('%.2f / %.2f' % (m[k][1], m[k][2]) for m in many)))
    tot = lambda d, j: sum(v[j] for v in d.values())
    print('| all | %.0f | %.2f | %s |' % (
        tot(one, 0), tot(one, 1),
        ' | '.join('%.2f / %.2f' % (tot(m, 1), tot(m, 2)) for m in many)))


if __name__ == '__main__':
    main()
