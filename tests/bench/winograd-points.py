#!/usr/bin/env python3
"""winograd-points.py — the f32 rounding error of Winograd F(4x4, 3x3) for
interpolation points 0, 1, -1, a, b (and infinity), simulated with numpy
on data like ResNet's (docs/native.md, "Weir's Winograd convolution",
accuracy).

  /usr/bin/python3 tests/bench/winograd-points.py [--sweep] [--stages]

Without options: the error of a few point sets on three layers (64
channels 56x56, 128 channels 28x28, 256 channels 12x12; post-ReLU inputs,
He-scaled filters), against the convolution in double, next to the direct
sum in f32.  --sweep: every pair a, b from +-1/4, 1/3, 1/2, 2/3, 3/4, 4/3,
3/2, 2, 3, 4 on the 28x28 layer, the 15 best by RMS.  --stages: which
stage's rounding matters (the transforms or the GEMM in f32, the rest in
double).

The filter transform is done in double and rounded once (as Weir does);
the input transform, the batched GEMM (numpy's matmul, f32) and the output
transform in f32.  Needs numpy only.
"""
import argparse
import itertools
from fractions import Fraction as Fr

import numpy as np


def matrices(points, m=4, r=3):
    """A^T (m x n), G (n x r) and B^T (n x n) of F(m, r) for the finite
    points and infinity: A^T and G from the points, B^T solved so that
    A^T ((G g) * (B^T d)) is exactly the correlation of d and g."""
    n = m + r - 1
    p = [float(a) for a in points]
    at = np.zeros((m, n))
    g = np.zeros((n, r))
    for j, a in enumerate(p):
        f = np.prod([a - b for l, b in enumerate(p) if l != j])
        for i in range(m):
            at[i][j] = a ** i
        for k in range(r):
            g[j][k] = a ** k / f
    at[m - 1][n - 1] = 1
    g[n - 1][r - 1] = 1
    eq = np.zeros((m * r * n, n * n))
    rhs = np.zeros(m * r * n)
    q = 0
    for i in range(m):
        for k in range(r):
            for l in range(n):
                for j in range(n):
                    eq[q, j * n + l] = at[i][j] * g[j][k]
                rhs[q] = 1.0 if l == i + k else 0.0
                q += 1
    bt = np.linalg.lstsq(eq, rhs, rcond=None)[0].reshape(n, n)
    assert np.abs(eq @ bt.reshape(-1) - rhs).max() < 1e-9
    return at, g, bt


def layer(rng, c, hw):
    """Padded post-ReLU input (c x (hw+2)^2) and He-scaled filters."""
    x = np.maximum(rng.standard_normal((c, hw + 2, hw + 2)), 0)
    x[:, 0, :] = x[:, -1, :] = x[:, :, 0] = x[:, :, -1] = 0
    w = rng.standard_normal((c, c, 3, 3)) * np.sqrt(2.0 / (9 * c))
    return x.astype(np.float32), w.astype(np.float32)


def direct(x, w, hw, dt):
    c = x.shape[0]
    cols = np.stack([x[:, i:i + hw, j:j + hw] for i in range(3)
                     for j in range(3)], 1).reshape(c * 9, hw * hw)
    return w.reshape(w.shape[0], -1).astype(dt) @ cols.astype(dt)


def winograd(x, w, hw, points, dt_in=np.float32, dt_gemm=np.float32,
             dt_out=np.float32):
    at, g, bt = matrices(points)
    c, m, t = x.shape[0], w.shape[0], hw // 4
    u = np.einsum('ik,mckl,jl->ijmc', g, w.astype(np.float64), g)
    u = u.astype(np.float32).astype(dt_gemm)
    d = np.stack([np.stack([x[:, 4 * a:4 * a + 6, 4 * b:4 * b + 6]
                            for b in range(t)], 1) for a in range(t)], 1)
    d = d.reshape(c, t * t, 6, 6).astype(dt_in)
    v = np.einsum('ik,cnkl->cnil', bt.astype(dt_in), d).astype(dt_in)
    v = np.einsum('cnil,jl->cnij', v, bt.astype(dt_in)).astype(dt_in)
    mm = np.matmul(u, v.transpose(2, 3, 0, 1).astype(dt_gemm)).astype(dt_out)
    y = np.einsum('ik,klmn->ilmn', at.astype(dt_out), mm).astype(dt_out)
    y = np.einsum('ilmn,jl->ijmn', y, at.astype(dt_out)).astype(dt_out)
    return y.reshape(4, 4, m, t, t).transpose(2, 3, 0, 4, 1).reshape(m, -1)


def err(y, ref):
    e = y.astype(np.float64) - ref
    return np.sqrt((e ** 2).mean()), np.abs(e).max()


SETS = {
    '0 +-1 +-2 (Lavin and Gray)': [0, 1, -1, 2, -2],
    '0 +-1 +-1/2': [0, 1, -1, Fr(1, 2), Fr(-1, 2)],
    '0 +-1 1/2 -2 (Weir)': [0, 1, -1, Fr(1, 2), -2],
    '0 +-1 -1/2 2': [0, 1, -1, Fr(-1, 2), 2],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sweep', action='store_true')
    ap.add_argument('--stages', action='store_true')
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    if args.sweep:
        x, w = layer(rng, 128, 28)
        ref = direct(x, w, 28, np.float64)
        cands = []
        for v in (Fr(1, 4), Fr(1, 3), Fr(1, 2), Fr(2, 3), Fr(3, 4), Fr(4, 3),
                  Fr(3, 2), 2, 3, 4):
            cands += [v, -v]
        res = []
        for a, b in itertools.combinations(cands, 2):
            rms, mx = err(winograd(x, w, 28, [0, 1, -1, a, b]), ref)
            res.append((rms, mx, str(a), str(b)))
        res.sort()
        print('128 channels 28x28, points 0 1 -1 a b: RMS, largest error')
        for rms, mx, a, b in res[:15]:
            print(f'  a {a:>5} b {b:>5}  {rms:.3g}  {mx:.3g}')
        return
    if args.stages:
        x, w = layer(rng, 128, 28)
        ref = direct(x, w, 28, np.float64)
        f32, f64 = np.float32, np.float64
        for name, pts in SETS.items():
            for lab, dts in (('all f32', (f32, f32, f32)),
                             ('input transform f32', (f32, f64, f64)),
                             ('GEMM f32', (f64, f32, f64)),
                             ('output transform f32', (f64, f64, f32))):
                rms, mx = err(winograd(x, w, 28, pts, *dts), ref)
                print(f'{name:28} {lab:22} RMS {rms:.3g} largest {mx:.3g}')
        return
    for c, hw in ((64, 56), (128, 28), (256, 12)):
        x, w = layer(rng, c, hw)
        ref = direct(x, w, hw, np.float64)
        rms, mx = err(direct(x, w, hw, np.float32), ref)
        print(f'{c} channels {hw}x{hw}: direct f32 RMS {rms:.3g} largest '
              f'{mx:.3g}')
        for name, pts in SETS.items():
            rms, mx = err(winograd(x, w, hw, pts), ref)
            print(f'  {name:28} RMS {rms:.3g} largest {mx:.3g}')


if __name__ == '__main__':
    main()
