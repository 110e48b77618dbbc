#!/usr/bin/python3
"""omp-region-cpu.py — the table of tests/bench/omp-region-cpu.c's records.

    tests/bench/omp-region-cpu.py [--maps DIR] STEPS ONE.txt TWO.txt [TWO.txt...]
    tests/bench/omp-region-cpu.py --places STEPS ONE.txt TWO.txt [TWO.txt...]

ONE.txt is a run at 1 thread, each TWO.txt one at N threads, of the same
kernel with STEPS calls (warm-up included).  Per kernel helper (the
outlined functions of one C function added; the generated program's own
element-wise maps as "maps"), per step, in ms: the regions, the barriers
inside them (of the first N-thread run; records written before tst18 have
none and show 0), the 1-thread
CPU time, then for each N-thread run the CPU time of all threads and of
the busiest thread (in brackets the regions' wall time), and at the end
the sums.  CPU times do not count the
time a thread waits for a core, so they compare runs made under
different loads; the busiest thread's time is a lower bound of the wall
time, and (all threads - 1 thread) is work the other threads add.
(docs/performance.md, "Where resnet18's training step goes at 2 threads".)

--maps DIR adds a second table, one row per parallel region of the
program's own code (its maps), named by the comment the code generator
writes above the loop ("map 3453 '_blocks_blocks.0_Relu_1': ...").  DIR
holds the generated C files of that kernel, kept by compiling it through
tests/bench/cc-keep-source.sh (a cold compile cache).  GCC names the
outlined functions FUNCTION._omp_fn.K, K counting the function's
parallel regions in source order, which is how a row finds its loop.
(docs/performance.md, "The element-wise maps of resnet18's training
step (trmap17)".)

--places prints one row per region of the run instead (records written
with OMP_REGION_PERIOD and OMP_REGION_FROM, omp-region-cpu.c: each record
one call site), in the order the run starts them: the helper, the
1-thread CPU time, the N-thread runs' busiest thread against half (a
third, ...) of it, and the region's start and end.

Records written since mob20 also hold the wall time from each region's
start to the moment its last thread began the region's work, and from
the moment its last thread finished to the region's end; their sums per
step are printed below the table (starting the sleeping threads).
"""
import glob
import os
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


def function(obj, off):
    addr, name = symbols(obj)
    i = bisect.bisect_right(addr, off) - 1
    return name[i] if i >= 0 else '?'


def helper(obj, off):
    n = function(obj, off)
    if n == '?':
        return n
    n = re.sub(r'\._omp_fn\.\d+$', '', n)
    # the generated program's own functions (entry point and its parts)
    return n if n.startswith('weir_') else 'maps'


def load(path, steps, key=helper):
    """per key: regions, CPU all, CPU busiest, barriers, wall, start, join
    (per step)"""
    d = collections.defaultdict(lambda: [0.0] * 7)
    for line in open(path):
        f = line.split()
        obj, off, calls, wall, cpu_sum, cpu_max = f[:6]
        if not obj.startswith('/'):
            continue
        v = d[key(obj, int(off, 16))]
        v[0] += int(calls) / steps
        v[1] += float(cpu_sum) / steps * 1e3
        v[2] += float(cpu_max) / steps * 1e3
        # the barriers inside the regions (records written since tst18)
        v[3] += (int(f[7]) if len(f) > 7 else 0) / steps
        v[4] += float(wall) / steps * 1e3
        # the regions' start and end (records written since mob20)
        if len(f) > 9:
            v[5] += float(f[8]) / steps * 1e3
            v[6] += float(f[9]) / steps * 1e3
    return d


def region_labels(folder):
    """FUNCTION._omp_fn.K -> the comment above its loop, from the C files."""
    labels = {}
    for path in sorted(glob.glob(os.path.join(folder, '*.c'))):
        fn, k, last = None, 0, '?'
        lines = open(path).read().split('\n')
        for i, line in enumerate(lines):
            m = re.match(r'^(?:weir_hidden |static )?\w+ \**(\w+)\(', line)
            if m:
                # a definition, not a prototype: no ';' before the '{'
                j = i
                while j + 1 < len(lines) and '{' not in lines[j] and \
                        ';' not in lines[j]:
                    j += 1
                if '{' in lines[j]:
                    fn, k = m.group(1), 0
            m = re.search(r'/\* (map \d+ .*?|\w+ \'[^\']*\' \(node \d+\).*?) \*/',
                          line)
            if m:
                last = m.group(1)
            if fn and '#pragma omp parallel' in line:
                labels['%s._omp_fn.%d' % (fn, k)] = last
                k += 1
    return labels


def maps_table(folder, steps, paths):
    labels = region_labels(folder)
    tabs = [load(p, steps, function) for p in paths]
    keys = [k for k in tabs[0] if not k.startswith('weir_')]
    keys.sort(key=lambda k: -tabs[0][k][1])
    print()
    print('| region | per step | 1 thread | ' +
          ' | '.join('run %d all / busiest' % (i + 1)
                     for i in range(len(tabs) - 1)) + ' |')
    print('|---|---|---|' + '---|' * (len(tabs) - 1))
    for k in keys:
        print('| %s | %.0f | %.3f | %s |' % (
            labels.get(k, k), tabs[0][k][0], tabs[0][k][1],
            ' | '.join('%.3f / %.3f' % (t[k][1], t[k][2]) for t in tabs[1:])))


def place(obj, off, p):
    return (int(p), helper(obj, off))


def load_places(path, steps):
    """per (place, helper): as load(), from records with a place"""
    d = collections.defaultdict(lambda: [0.0] * 7)
    for line in open(path):
        f = line.split()
        if not f[0].startswith('/') or len(f) < 11 or int(f[10]) < 0:
            continue
        v = d[place(f[0], int(f[1], 16), f[10])]
        v[0] += int(f[2]) / steps
        v[1] += float(f[4]) / steps * 1e3
        v[2] += float(f[5]) / steps * 1e3
        v[3] = max(v[3], int(f[6]))  # threads (here: not barriers)
        v[4] += float(f[3]) / steps * 1e3
        v[5] += float(f[8]) / steps * 1e3
        v[6] += float(f[9]) / steps * 1e3
    return d


def places_table(steps, paths):
    one = load_places(paths[0], steps)
    many = [load_places(p, steps) for p in paths[1:]]
    keys = sorted(set(one) | set().union(*many))
    print('| place | helper | 1 thread us | ' + ' | '.join(
        'run %d busiest us (/ ideal), start + end us' % (i + 1)
        for i in range(len(many))) + ' |')
    print('|---|---|---|' + '---|' * len(many))
    for k in keys:
        cells = []
        for m in many:
            v = m[k]
            ideal = one[k][1] / max(1, v[3]) if k in one else 0
            cells.append('%.1f (%.2f), %.1f' % (
                v[2] * 1e3, v[2] / ideal if ideal else 0,
                (v[5] + v[6]) * 1e3))
        print('| %d | %s | %.1f | %s |' % (k[0], k[1], one[k][1] * 1e3,
                                          ' | '.join(cells)))


def main():
    args = sys.argv[1:]
    folder = None
    if args[:1] == ['--maps'] and len(args) > 1:
        folder, args = args[1], args[2:]
    if args[:1] == ['--places'] and len(args) > 3:
        places_table(float(args[1]), args[2:])
        return
    if len(args) < 3:
        sys.exit(__doc__)
    steps = float(args[0])
    one = load(args[1], steps)
    many = [load(p, steps) for p in args[2:]]
    keys = sorted(set(one) | set().union(*many), key=lambda k: -one[k][1])
    print('| helper | regions | barriers | 1 thread | ' +
          ' | '.join('run %d all / busiest (wall)' % (i + 1)
                     for i in range(len(many))) + ' |')
    print('|---|---|---|---|' + '---|' * len(many))
    for k in keys:
        print('| %s | %.0f | %.0f | %.2f | %s |' % (
            k, one[k][0], many[0][k][3], one[k][1],
            ' | '.join('%.2f / %.2f (%.2f)' % (m[k][1], m[k][2], m[k][4])
                       for m in many)))
    tot = lambda d, j: sum(v[j] for v in d.values())
    print('| all | %.0f | %.0f | %.2f | %s |' % (
        tot(one, 0), tot(many[0], 3), tot(one, 1),
        ' | '.join('%.2f / %.2f (%.2f)' % (tot(m, 1), tot(m, 2), tot(m, 4))
                   for m in many)))
    # records since mob20: the regions' start (until the last thread is
    # in) and end (from the last thread out), summed, per N-thread run
    if any(tot(m, 5) or tot(m, 6) for m in many):
        print()
        print('regions\' start / end per step, ms: ' + ', '.join(
            'run %d %.3f / %.3f' % (i + 1, tot(m, 5), tot(m, 6))
            for i, m in enumerate(many)))
    if folder:
        maps_table(folder, steps, args[1:])


if __name__ == '__main__':
    main()
