/* test-kernel-depthwise.c — the native implementation "depthwise" of Conv
 * (Weir's vectorized depthwise kernel, core/kernels/depthwise.c) against
 * the reference interpreter running the pure expansion of the same
 * program.
 *
 * One program holds many independent depthwise Conv nodes (one per case,
 * with their own containers), so one compile covers them: 3x3 and 5x5 at
 * stride 1 and 2 with symmetric, asymmetric, large and no padding, widths
 * that are not multiples of any vector (7, 13, 21, 37, 50, 64), batch 1
 * and 2, with and without bias; the default channel-blocked kernel with
 * whole and partial blocks of channels, horizontal dilation, a 1x1 and
 * unequal strides (its generic instance); the row kernel with both
 * vector widths forced through the node attribute, rows too wide for its
 * ring of padded rows (the block-by-block path), and its scalar loop nest
 * (a vertically dilated 3x5 kernel, a 9x9 one).  The program is generated once
 * per ISA the CPU has ($WEIR_ISA lowers it), must call the kernel (default
 * choice, no "direct" loop nest) and must match the interpreter within
 * 1e-4 at 1, 2 and 3 OpenMP threads; every output element is pre-set to a
 * sentinel, so an element the kernel skips fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-attr.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-hw.h"
#include "weir-interp.h"
#include "weir-kernels.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

#include "kernel-check.h"

#define FLAGS "-O2 -fopenmp -fPIC -shared"

/* One depthwise Conv: X [n, c, h, w], kernel kh x kw, strides, pads
 * (top, left, bottom, right), dilations, bias or not, forced width (0:
 * none). */
typedef struct {
  gint64 n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  gboolean bias;
  gint64 vl;
  /* an epilogue: tasklet code over x (the node's result) and r (a
   * residual R<k> of the output's shape, when `residual`), writing y;
   * `mark` is what the kernel's call comment must say ("" when the
   * epilogue must stay a separate map) */
  const char *epi;
  gboolean residual;
  const char *mark;
} Case;

static const Case cases[] = {
    /* 3x3 stride 1 same padding: interior blocks and a partial tail */
    {1, 5, 13, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    /* 3x3 stride 2, batch 2, no bias */
    {2, 3, 17, 41, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE, 0},
    /* 5x5 stride 1 same padding */
    {1, 4, 11, 50, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, TRUE, 0},
    /* 5x5 stride 2, asymmetric padding */
    {1, 3, 19, 35, 5, 5, 2, 2, 1, 2, 2, 1, 1, 1, TRUE, 0},
    /* no padding, tiny plane */
    {1, 2, 7, 7, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, TRUE, 0},
    /* stride 2 without padding on a wide row */
    {1, 6, 8, 64, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, TRUE, 0},
    /* padding larger than the kernel reach: whole rows of zeros */
    {1, 2, 9, 13, 3, 3, 1, 1, 3, 3, 3, 3, 1, 1, TRUE, 0},
    /* the last size of MobileNetV2 (7 x 7) and 14 x 14 */
    {1, 8, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 4, 14, 14, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0},
    /* the widths forced through the node attribute */
    {1, 3, 10, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 16},
    {1, 3, 10, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 8},
    {1, 3, 10, 37, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, TRUE, 4},
    /* rows too wide for the row kernel's ring of padded rows (the row
     * kernel forced): the blocks one by one, borders through a buffer */
    {1, 2, 5, 3001, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 8},
    {1, 2, 7, 3500, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 8},
    /* and in the channel-blocked kernel (a large ring) */
    {1, 3, 5, 3001, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    /* the scalar loop nest (vertical dilation); unequal strides (the
     * channel-blocked kernel's generic instance) */
    {1, 3, 10, 12, 3, 5, 1, 1, 1, 2, 1, 2, 2, 1, TRUE, 0},
    {1, 3, 12, 15, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, FALSE, 0},
    /* channel-blocked: whole blocks of channels and a partial one (35 =
     * 2 x 16 + 3, 4 x 8 + 3), partial column tiles, batch 2 */
    {2, 35, 9, 23, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 19, 14, 14, 5, 5, 2, 2, 1, 2, 2, 1, 1, 1, TRUE, 0},
    {1, 32, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, FALSE, 0},
    /* the output rows prefetched ahead of their store and the next
     * block's weights (mobile14i): three blocks of channels, the last
     * partial (40 = 16 + 16 + 8), on whole 14 x 14 planes; a plane shorter
     * than the prefetch distance (5 columns: 13 rows ahead, 3 rows); bands
     * of rows at 2 threads (one block of 16 channels, 32 output rows); 70
     * columns (one row ahead; from 96 on, none: the 3001-column case) */
    {1, 40, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 48, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 16, 64, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 17, 6, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    /* horizontal dilation and a 1x1 kernel: the generic instance */
    {1, 17, 8, 19, 3, 3, 1, 1, 1, 2, 1, 2, 1, 2, TRUE, 0},
    {1, 16, 5, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, TRUE, 0},
    /* the plane kernel (AVX-512, 3x3, output rows of 9 to 128 columns
     * at stride 1, 9 to 16 at stride 2, mobile14l): its narrowest row
     * and the one under it (8: channel-blocked), 16 and 17 columns at
     * both strides (one chunk of 16 and two), its widest at stride 1
     * (128: 8 chunks) and 129; rows of 70 columns (5 chunks, the last
     * partial);
     * asymmetric padding at both strides; fewer than four rows (no group
     * of four); padding beyond the kernel's reach at stride 2; groups of
     * four rows inside the image and rows near the borders in one plane
     * (30 rows) */
    {1, 3, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 5, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 5, 12, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, FALSE, 0},
    {1, 2, 9, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 2, 9, 34, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 2, 6, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 2, 6, 129, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, FALSE, 0},
    {1, 3, 9, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    /* its packed mode (stride 1, rows of 5 to 8 columns as wide as the
     * input: 16 / ow rows per vector): 5 columns (3 rows a vector), 6,
     * 4 (channel-blocked); 7 columns with 30 rows (pairs of interior
     * blocks), 1 and 3 rows; asymmetric padding keeping the width;
     * padding that changes it (channel-blocked) */
    {1, 3, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 11, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, FALSE, 0},
    {1, 3, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 5, 30, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {2, 3, 1, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 3, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 4, 9, 8, 3, 3, 1, 1, 2, 0, 0, 2, 1, 1, TRUE, 0},
    {1, 4, 9, 8, 3, 3, 1, 1, 2, 2, 0, 2, 1, 1, TRUE, 0},
    {1, 4, 11, 12, 3, 3, 1, 1, 0, 0, 2, 2, 1, 1, TRUE, 0},
    {2, 4, 13, 23, 3, 3, 2, 2, 2, 0, 0, 2, 1, 1, TRUE, 0},
    {1, 3, 3, 15, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 15, 24, 3, 3, 2, 2, 3, 3, 3, 3, 1, 1, TRUE, 0},
    {1, 7, 30, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    /* its packed mode at stride 2 (mobile14p: output rows of 5 to 8
     * columns, half the input's, two rows per vector, the two input rows
     * of each kernel row permuted into the taps): 14 -> 7 (MobileNetV2),
     * odd maps 13 -> 7 at batch 2 without bias, 10 -> 5 columns on 9
     * rows, 16 -> 8, one output row (2 input rows), asymmetric padding
     * keeping the width (TensorFlow's 0 before, 1 after), padding beyond
     * the kernel's reach at the top and bottom; 15 columns without
     * padding (7, not half of 15: channel-blocked), 8 -> 4 (channel-
     * blocked) */
    {1, 5, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {2, 3, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE, 0},
    {1, 3, 9, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 2, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 4, 14, 14, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, TRUE, 0},
    {1, 4, 11, 14, 3, 3, 2, 2, 3, 1, 3, 1, 1, 1, TRUE, 0},
    {1, 3, 14, 15, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, TRUE, 0},
    {1, 3, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    /* the plane kernel at stride 2 with a left padding of one, its rows
     * deinterleaved (mob18; 17 to 32 columns were mobile14p's): 56 -> 28
     * (MobileNetV2), 32, 33; the next plane's input prefetched past the
     * tensor's end on the last plane */
    {1, 3, 12, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {2, 3, 9, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE, 0},
    {1, 3, 9, 66, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    /* deinterleaved rows (mob18): 112 -> 56 (four chunks, the last of 8
     * columns; 5 output rows: a block of four and one), odd maps at batch
     * 2 (113 -> 57, 7 rows), 255 -> 128 (eight chunks, the widest) and
     * 257 -> 129 (channel-blocked), 28 -> 14 (one chunk), a right
     * padding of 0 and of 2 (the last output's right taps in the
     * padding), padding beyond the kernel's reach at the top and bottom,
     * one input row, 2 -> 1 rows */
    {1, 3, 10, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {2, 3, 7, 113, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE, 0},
    {1, 2, 6, 255, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 2, 6, 257, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 5, 28, 28, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 11, 20, 3, 3, 2, 2, 1, 1, 1, 0, 1, 1, TRUE, 0},
    {1, 3, 11, 20, 3, 3, 2, 2, 0, 1, 2, 2, 1, 1, FALSE, 0},
    {1, 3, 13, 40, 3, 3, 2, 2, 3, 1, 3, 1, 1, 1, TRUE, 0},
    {1, 3, 1, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {2, 3, 2, 37, 3, 3, 2, 2, 0, 1, 1, 1, 1, 1, TRUE, 0},
    /* deinterleaved rows at 5x5 stride 2 with a left padding of two
     * (eff19): 56 -> 28 (EfficientNet-B0, two chunks, 12 rows: blocks
     * of four), odd maps at batch 2 without bias (57 -> 29, 9 rows: a
     * block of one), 18 -> 9 (the narrowest), 64 -> 32 (the second
     * chunk's last right tap in the padding) and 66 -> 33 (three chunks,
     * the last of one column, the right taps from the next chunk), 255 ->
     * 128 (eight chunks, the widest) and 257 -> 129 (channel-blocked), a
     * right padding of 1 and of 3, no top padding, padding beyond the
     * kernel's reach at the top and bottom, one input row; a left padding
     * of one (channel-blocked) */
    {1, 3, 12, 56, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0},
    {2, 3, 9, 57, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, FALSE, 0},
    {1, 3, 8, 18, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0},
    {1, 2, 9, 64, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0},
    {1, 2, 10, 66, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0},
    {1, 2, 6, 255, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0},
    {1, 2, 6, 257, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0},
    {1, 3, 11, 40, 5, 5, 2, 2, 2, 2, 2, 1, 1, 1, TRUE, 0},
    {1, 3, 11, 40, 5, 5, 2, 2, 2, 2, 2, 3, 1, 1, FALSE, 0},
    {2, 3, 10, 37, 5, 5, 2, 2, 0, 2, 1, 2, 1, 1, TRUE, 0},
    {1, 3, 13, 40, 5, 5, 2, 2, 4, 2, 4, 2, 1, 1, TRUE, 0},
    {1, 3, 1, 40, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0},
    {1, 3, 9, 40, 5, 5, 2, 2, 2, 1, 2, 1, 1, 1, TRUE, 0},
    /* the packed modes' table of row masks (at most 16 blocks of rows)
     * and the blocks beyond it (tested per block): stride 1 with 32 and
     * 33 rows of 7 (16 and 17 blocks), stride 2 with 32 and 33 output
     * rows of 7 */
    {1, 3, 32, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 33, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, FALSE, 0},
    {1, 3, 64, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0},
    {1, 3, 66, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE, 0},
    /* 81 taps: beyond the channel-blocked kernel, the row kernel's loop
     * nest */
    {1, 4, 12, 12, 9, 9, 1, 1, 4, 4, 4, 4, 1, 1, TRUE, 0},
};

/* Epilogues applied in the store (and one the kernel leaves as a map). */
static const Case epilogues[] = {
    {1, 5, 13, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "y = min(max(x, 0.0), 6.0)", FALSE, "depthwise + clip"},
    {1, 4, 12, 30, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0, "y = max(x, 0)",
     FALSE, "depthwise + clip"},
    {1, 4, 11, 19, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, TRUE, 0,
     "y = 1 / (1 + exp(-x))", FALSE, "depthwise + sigmoid"},
    {1, 6, 15, 15, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0,
     "s = 1 / (1 + exp(-x))\ny = x * s", FALSE, "depthwise + SiLU"},
    {2, 3, 9, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "y = x / (1 + exp(-x))", FALSE, "depthwise + SiLU"},
    {1, 3, 10, 26, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "y = x * max(0, min(1, x / 6 + 0.5))", FALSE, "depthwise + HardSwish"},
    {1, 4, 12, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0, "y = max(x + r, 0.0)",
     TRUE, "depthwise + residual + clip"},
    {1, 4, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, FALSE, 0, "y = r + x", TRUE,
     "depthwise + residual */"},
    /* a partial block of channels with a residual (20 = 16 + 4) */
    {1, 20, 9, 18, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "y = min(max(x + r, 0.0), 6.0)", TRUE, "depthwise + residual + clip"},
    /* the plane kernel's instances (mobile14l): clip and SiLU inlined,
     * HardSwish through the switch, at stride 1 and 2, with a residual */
    {1, 6, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "y = min(max(x + r, 0.0), 6.0)", TRUE, "depthwise + residual + clip"},
    {1, 5, 28, 28, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "s = 1 / (1 + exp(-x))\ny = x * s", FALSE, "depthwise + SiLU"},
    {1, 5, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "s = x + r\ny = s / (1 + exp(-s))", TRUE, "depthwise + residual + SiLU"},
    {1, 4, 20, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE, 0,
     "y = x * max(0, min(1, x / 6 + 0.5))", FALSE, "depthwise + HardSwish"},
    {1, 4, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0, "y = max(x, 0)",
     FALSE, "depthwise + clip"},
    {1, 6, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "s = x + r\ny = s / (1 + exp(-s))", TRUE, "depthwise + residual + SiLU"},
    {1, 6, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "y = min(max(x, 0.0), 6.0)", FALSE, "depthwise + clip"},
    /* deinterleaved rows at stride 2 (mob18): ReLU6 with a residual on
     * 112 -> 56 columns (the clip instance's prefetch of the next
     * plane), SiLU with a residual on 70 -> 35 */
    {1, 3, 9, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "y = min(max(x + r, 0.0), 6.0)", TRUE, "depthwise + residual + clip"},
    {2, 3, 11, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE, 0,
     "s = x + r\ny = s / (1 + exp(-s))", TRUE, "depthwise + residual + SiLU"},
    /* deinterleaved rows at 5x5 stride 2 (eff19): SiLU with a residual
     * on 56 -> 28 at batch 2, ReLU6 on 45 -> 23, HardSwish through the
     * switch on 36 -> 18 */
    {2, 5, 12, 56, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0,
     "s = x + r\ny = s / (1 + exp(-s))", TRUE, "depthwise + residual + SiLU"},
    {1, 4, 13, 45, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE, 0,
     "y = min(max(x, 0.0), 6.0)", FALSE, "depthwise + clip"},
    {1, 4, 10, 36, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, FALSE, 0,
     "y = x * max(0, min(1, x / 6 + 0.5))", FALSE, "depthwise + HardSwish"},
    /* the packed mode at stride 2 (mobile14p): ReLU6, SiLU with a
     * residual, HardSwish through the switch */
    {1, 6, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "y = min(max(x, 0.0), 6.0)", FALSE, "depthwise + clip"},
    {1, 5, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, 0,
     "s = x + r\ny = s / (1 + exp(-s))", TRUE, "depthwise + residual + SiLU"},
    {1, 4, 10, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE, 0,
     "y = x * max(0, min(1, x / 6 + 0.5))", FALSE, "depthwise + HardSwish"},
    /* the scalar loop nest applies the epilogue too */
    {1, 3, 10, 12, 3, 5, 1, 1, 1, 2, 1, 2, 2, 1, TRUE, 0,
     "s = 1 / (1 + exp(-x))\ny = s * x", FALSE, "depthwise + SiLU"},
    /* not an activation the kernel knows: a map after the call */
    {1, 3, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE, 0, "y = x * x - 1.5",
     FALSE, ""},
};

static gint64 out_size(gint64 in, gint64 k, gint64 s, gint64 p0, gint64 p1,
                       gint64 d) {
  return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

static void add_case(WeirGraph *g, WeirState *s, guint k, const Case *c) {
  g_autoptr(GError) err = NULL;
  const char *ins[] = {"in0", "in1", NULL, NULL, NULL};
  guint ni = 2;
  if (c->bias)
    ins[ni++] = "in2";
  if (c->residual)
    ins[ni++] = "epi0";
  const char *outs[] = {"out0", NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib = weir_state_add_library(g, s, label, "Conv", ins, outs);
  gint64 oh = out_size(c->h, c->kh, c->sh, c->pt, c->pb, c->dh);
  gint64 ow = out_size(c->w, c->kw, c->sw, c->pl, c->pr, c->dw);
  g_autofree char *xs =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      c->n, c->c, c->h, c->w);
  g_autofree char *ws = g_strdup_printf(
      "%" G_GINT64_FORMAT ", 1, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, c->c,
      c->kh, c->kw);
  g_autofree char *bs = g_strdup_printf("%" G_GINT64_FORMAT, c->c);
  g_autofree char *ys =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      c->n, c->c, oh, ow);
  g_autofree char *xn = g_strdup_printf("X%u", k),
                  *wn = g_strdup_printf("W%u", k),
                  *bn = g_strdup_printf("B%u", k),
                  *yn = g_strdup_printf("Y%u", k);
  add_port(g, s, lib, xn, WEIR_DTYPE_F32, xs, "in0", TRUE);
  add_port(g, s, lib, wn, WEIR_DTYPE_F32, ws, "in1", TRUE);
  if (c->bias)
    add_port(g, s, lib, bn, WEIR_DTYPE_F32, bs, "in2", TRUE);
  add_port(g, s, lib, yn, WEIR_DTYPE_F32, ys, "out0", FALSE);
  if (c->residual) {
    g_autofree char *rn = g_strdup_printf("R%u", k);
    add_port(g, s, lib, rn, WEIR_DTYPE_F32, ys, "epi0", TRUE);
  }
  weir_node_set_attr_int(lib, "group", c->c);
  gint64 st[2] = {c->sh, c->sw}, di[2] = {c->dh, c->dw},
         pads[4] = {c->pt, c->pl, c->pb, c->pr}, ks[2] = {c->kh, c->kw};
  weir_node_set_attr_ints(lib, "strides", st, 2);
  weir_node_set_attr_ints(lib, "dilations", di, 2);
  weir_node_set_attr_ints(lib, "pads", pads, 4);
  weir_node_set_attr_ints(lib, "kernel_shape", ks, 2);
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  /* an implementation parameter, not an operator attribute (set after the
   * check, as a tuner would) */
  if (c->vl)
    weir_node_set_attr_int(lib, WEIR_DEPTHWISE_VL_ATTR, c->vl);
  if (c->epi) {
    const char *conns[] = {"y", "x", "r"};
    weir_node_set_attr_string(lib, WEIR_EPILOGUE_CODE, c->epi);
    weir_node_set_attr_strings(lib, WEIR_EPILOGUE_CONNS, conns,
                               c->residual ? 3 : 2);
  }
}

/* Compiles g (default implementations) for every ISA and compares every
 * Y<k> with the interpreter on the pure expansion, at 1 and 2 threads. */
static void check_program(const WeirGraph *g, const Case *cs, guint nodes) {
  g_autoptr(GError) err = NULL;
  g_autoptr(GHashTable) args = random_args(g, 7);
  g_autoptr(GHashTable) ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("%s: pure expansion: %s", g->name, err->message);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("%s: interpreter: %s", g->name, err->message);
  Fixture *f = fixture_new_shared();
  f->opts.flags = FLAGS;
  WeirHwIsa list[3];
  guint ni = isas(list);
  for (guint i = 0; i < ni; i++) {
    g_setenv("WEIR_ISA", weir_hw_isa_name(list[i]), TRUE);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", g->name, err->message);
    g_autofree char *mark = g_strdup_printf(
        "implementation\n * \"depthwise\") for %s:", weir_hw_isa_name(list[i]));
    if (!strstr(src, mark) || !strstr(src, "weir_dwconv2d_f32(X0, "))
      fail_msg("%s: the depthwise kernel for %s is not called", g->name,
               weir_hw_isa_name(list[i]));
    assert_null(strstr(src, "weir_conv2d_depthwise_f32("));
    for (guint n = 0; n < nodes; n++)
      if (cs[n].epi)
        check_mark(src, g->name, n, cs[n].mark, "depthwise +");
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!k)
      fail_msg("%s (%s): %s", g->name, weir_hw_isa_name(list[i]), err->message);
    check_runs(k, args, ref, nodes, g->name, weir_hw_isa_name(list[i]));
  }
  g_unsetenv("WEIR_ISA");
  fixture_free(f);
}

static void test_depthwise(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("depthwise");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
    add_case(g, s, k, &cases[k]);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  /* the default choice for every node */
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      assert_string_equal(weir_native_default_impl(g, s, n), "depthwise");
  }
  check_program(g, cases, G_N_ELEMENTS(cases));
}

/* Epilogues in the store, at every ISA, 1 and 2 threads. */
static void test_epilogues(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("epilogues");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(epilogues); k++)
    add_case(g, s, k, &epilogues[k]);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  check_program(g, epilogues, G_N_ELEMENTS(epilogues));
}

/* What the classifier makes of epilogue code. */
static void test_classify(void **state) {
  (void)state;
  static const struct {
    const char *code;
    guint nconns;
    gboolean ok;
    int act;
    double lo, hi;
    int residual;
  } want[] = {
      {"y = min(max(x, 0.0), 6.0)", 2, TRUE, 1, 0, 6, -1},
      {"y = max(min(6, x), -1.5)", 2, TRUE, 1, -1.5, 6, -1},
      {"y = max(x, 0)", 2, TRUE, 1, 0, G_MAXDOUBLE, -1},
      {"y = 1 / (1 + exp(-x))", 2, TRUE, 2, 0, 0, -1},
      {"t = 1 / (1 + exp(-x))\ny = x * t", 2, TRUE, 3, 0, 0, -1},
      {"y = x * max(0, min(1, x / 6 + 0.5))", 2, TRUE, 4, 0, 0, -1},
      {"y = x + r", 3, TRUE, 0, 0, 0, 0},
      {"a = x + r\ny = max(a, 0.0)", 3, TRUE, 1, 0, G_MAXDOUBLE, 0},
      {"y = x", 2, TRUE, 0, 0, 0, -1},
      /* as the -O2 pipeline leaves them on ONNX models: HardSigmoid's
       * 1/6 as an f32 literal through a local, ReLU then ReLU6 */
      {"h = max(0, min(1, 0.1666666716337204 * x + 0.5))\ny = x * h", 2, TRUE,
       4, 0, 0, -1},
      {"t = max(x, 0)\ny = min(max(t, 0.0), 6.0)", 2, TRUE, 1, 0, 6, -1},
      {"t = max(x, 1.0)\ny = min(t, 0.5)", 2, FALSE, 0, 0, 0, -1},
      /* GELU in the exporter's order and in another; a scale (which
       * only Gemm and MatMul take: weir_kernel_epilogue_of, checked in
       * test-kernel-gemm) */
      {"t = x / 1.4142135\ne = erf(t)\nw = e + 1.0\nv = x * w\ny = v * 0.5", 2,
       TRUE, 5, 0, 0, -1},
      {"y = 0.5 * (x + r) * (1 + erf((x + r) * 0.70710678))", 3, FALSE, 0, 0, 0,
       -1},
      {"a = x + r\ny = 0.5 * a * (1 + erf(a * 0.70710678))", 3, TRUE, 5, 0, 0,
       0},
      {"y = x * 2.0", 2, TRUE, 0, 0, 0, -1},
      /* refused: other arithmetic, a sigmoid of something else, a
       * reassigned name, a bound that is not a literal, GELU with another
       * constant */
      {"y = x * x", 2, FALSE, 0, 0, 0, -1},
      {"y = x * 0.5 * (1 + erf(x / 2.0))", 2, FALSE, 0, 0, 0, -1},
      {"y = x * (1 / (1 + exp(-r)))", 3, FALSE, 0, 0, 0, -1},
      {"y = x\ny = y + 1", 2, FALSE, 0, 0, 0, -1},
      {"y = max(x, r)", 3, FALSE, 0, 0, 0, -1},
      {"y = r", 3, FALSE, 0, 0, 0, -1},
  };
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
    g_autoptr(WeirGraph) g = weir_graph_new("c");
    WeirState *s = weir_graph_add_state(g, "main");
    const char *ins[] = {"in0", "in1", NULL};
    const char *outs[] = {"out0", NULL};
    WeirNode *n = weir_state_add_library(g, s, "c", "Conv", ins, outs);
    const char *conns[] = {"y", "x", "r"};
    weir_node_set_attr_string(n, WEIR_EPILOGUE_CODE, want[i].code);
    weir_node_set_attr_strings(n, WEIR_EPILOGUE_CONNS, conns, want[i].nconns);
    WeirEpilogueKind k;
    gboolean ok = weir_kernel_epilogue_classify(n, &k);
    if (ok != want[i].ok)
      fail_msg("'%s': classified %s", want[i].code, ok ? "yes" : "no");
    if (!ok)
      continue;
    assert_int_equal(k.act, want[i].act);
    assert_int_equal(k.residual, want[i].residual);
    if (k.act == 1) {
      assert_true(k.lo == want[i].lo);
      assert_true(k.hi == want[i].hi);
    }
  }
}

/* What the kernel does not take: f64, an ordinary grouped convolution. */
static void test_refusals(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  static const char *const kinds[] = {"f64", "grouped"};
  for (guint t = 0; t < G_N_ELEMENTS(kinds); t++) {
    gboolean f64 = t == 0;
    g_autoptr(WeirGraph) g = weir_graph_new("refuse");
    WeirState *s = weir_graph_add_state(g, "main");
    const char *ins[] = {"in0", "in1", NULL};
    const char *outs[] = {"out0", NULL};
    WeirNode *lib = weir_state_add_library(g, s, "c", "Conv", ins, outs);
    WeirDType dt = f64 ? WEIR_DTYPE_F64 : WEIR_DTYPE_F32;
    const char *xs = "1, 4, 6, 6", *ws = f64 ? "4, 1, 3, 3" : "4, 2, 3, 3";
    const char *names[] = {"X", "W", "Y"};
    const char *shapes[] = {xs, ws, "1, 4, 4, 4"};
    const char *conns[] = {"in0", "in1", "out0"};
    for (guint i = 0; i < 3; i++) {
      WeirContainer *c =
          weir_graph_add_array(g, names[i], dt, shapes[i], FALSE, &err);
      assert_non_null(c);
      g_autoptr(WeirSubset) full = weir_container_full_subset(c);
      g_autofree char *sub = weir_subset_to_string(full);
      WeirNode *a = weir_state_add_access(g, s, names[i]);
      if (i < 2)
        assert_true(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conns[i],
                                          names[i], sub, &err));
      else
        assert_true(weir_state_add_memlet(g, s, lib->id, conns[i], a->id, NULL,
                                          names[i], sub, &err));
    }
    weir_node_set_attr_int(lib, "group", f64 ? 4 : 2);
    const WeirNativeImpl *ni = weir_native_lookup("Conv", "depthwise");
    assert_non_null(ni);
    g_autofree char *why = NULL;
    assert_false(ni->accepts(g, s, lib, &why));
    assert_non_null(why);
    assert_non_null(strstr(why, f64 ? "f32" : "depthwise"));
    assert_string_not_equal(weir_native_default_impl(g, s, lib), "depthwise");
  }
}

/* The width follows the ISA. */
static void test_params(void **state) {
  (void)state;
  static const struct {
    WeirHwIsa isa;
    guint vl;
  } want[] = {{WEIR_HW_ISA_AVX512, 16},
              {WEIR_HW_ISA_AVX2, 8},
              {WEIR_HW_ISA_GENERIC, 4}};
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
    WeirHwProfile hw = {.isa = want[i].isa};
    WeirDepthwiseParams p;
    weir_kernel_depthwise_params(&hw, &p);
    assert_int_equal(p.vl, want[i].vl);
    g_autofree char *text = weir_kernel_depthwise_text(&p);
    g_autofree char *fn = g_strdup_printf("weir_dw_k3s2_%u(", want[i].vl / 2);
    assert_non_null(strstr(text, fn));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_params),    cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_classify),  cmocka_unit_test(test_depthwise),
      cmocka_unit_test(test_epilogues),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
