/* conv-grad.c — the native implementation "weir" of ConvGradInput and
 * ConvGradFilter (ir/ops/training.c): the backward convolutions of a
 * training program on Weir's own GEMM (core/kernels/gemm.c), and a direct
 * kernel for depthwise convolutions (docs/native.md).
 *
 * Conventions of this file:
 *  - Accepted exactly when the BLAS-based implementations accept the node
 *    ("col2im" for ConvGradInput, "im2col" for ConvGradFilter: rank 4,
 *    row-major, explicit attributes, f32 or f64); the default in f32.
 *  - Input gradient, group convolution with one input and one output
 *    channel per group (depthwise): weir_dwconv2d_grad_input_<dtype>, a direct
 *    loop nest over the (image, channel) planes (each plane one thread's).
 *    At unit stride otherwise: a convolution of dY with the flipped,
 *    transposed filter (padding dilation * (k - 1) - pad), its patches
 *    gathered from dY by the GEMM's packing (implicit im2col), written
 *    into dX by one GEMM per image and group: no column buffer, no
 *    col2im, no zeroing; with enough images (a multiple of the threads,
 *    or four or more each) the threads take whole images, each GEMM on
 *    one thread in its own slot of the packing buffers.  Maps smaller than
 * WEIR_CONV_GRAD_DEPTH pixels with at least as many input channels (per group)
 * as pixels (the last two stages of a CIFAR ResNet, 128 channels of 8x8 and
 * 256 of 4x4) take chunks of images instead: one GEMM per group and chunk
 * whose packing gathers the chunk's patches from dY (its images side by side:
 * no column buffer), so that the flipped filter is packed once per chunk, not
 * once per image; each image's rows then copied into dX.  There the flipped
 * filter is stored transposed (mg*kh*kw x cg), which each output channel's
 * contiguous block of W becomes by a local copy.
 * Strides above 1 without dilation (kernels of more than one tap, pads
 *    within the kernel's reach): by phase of the stride, each phase a
 *    unit-stride convolution of dY with its taps (the flipped sub-filter
 *    in the scratch block), one GEMM per chunk of images whose packing
 *    gathers the patches from dY, its rows written into dX with the stride
 *    (tr22: no column buffer, no col2im).
 * At other strides (1x1 kernels, dilations, pads beyond the kernel's reach):
 *    one GEMM per group and chunk of images into a column buffer, then col2im
 * (threads split the (image, channel) pairs); the chunk's rows of dY are copied
 * side by side so that the GEMM has at least WEIR_CONV_GRAD_DEPTH columns (the
 *    stride-2 layers of a CIFAR ResNet have 16 to 256 output pixels).
 *  - Filter gradient, depthwise: weir_dwconv2d_grad_filter_<dtype>, one
 *    channel per thread at a time, the images summed in order.  Otherwise
 *    one GEMM per group and chunk of images, dW_g += dY_g * cols^T, with
 *    the chunk's patches side by side in a column buffer (im2col) and, for
 *    chunks of more than one image, dY_g's rows copied beside each other,
 *    so that the GEMM's depth (images x output pixels) is at least
 *    WEIR_CONV_GRAD_DEPTH even for small feature maps.  Unit-stride
 *    layers of one group with at least 16 channels each way and padded
 *    maps at most 60% larger than the output (taps_emit):
 *    weir_wconv2d_grad_taps_<id>, the GEMM's microkernel called per
 *    kernel tap on a copy of x in panels of MR channels (its A panels as
 *    they lie: no im2col, no per-tap copies) and dy transposed into B
 *    panels, both by 16 x 16 transposes (weir_cg_tr16_<id>); threads take
 *    chunks of images (or, with fewer chunks than threads, shares of a
 *    chunk's panels) whose partial results are added in chunk order.
 *    Its slices end with each image's first oh padded rows (the rows
 *    below meet no dy), and its B panels are as wide as suits m.
 *  - Small planes (at most 1024 values with the taps' reach): the
 *    im2col of the filter gradient copies each (channel, image) plane
 *    into a zero frame on the stack first and writes every tap's rows
 *    from it without bounds tests.
 *  - Every temporary (the flipped filter, the column buffer, the copied
 *    rows, the GEMM's packing buffers) lives in the node's scratch block
 *    of the kernel's workspace: steady-state runs allocate nothing.  The
 *    GEMM's buffers come first (64-byte aligned), the rest after them.
 *  - The sums are done in an order that does not depend on the number of
 *    threads, so the results are the same at any thread count.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-kernels.h"
#include "weir-ops.h"

/* The filter gradient gathers whole images until the GEMM's depth (the
 * chunk's output pixels) reaches this. */
#define WEIR_CONV_GRAD_DEPTH 512

/* The per-tap filter gradient's partial results (all chunks) and each
 * thread's xq and B panels stay below this many bytes, or the node
 * keeps im2col. */
#define WEIR_CONV_GRAD_TAPS_BYTES (8 << 20)

/* ... but the filter gradient's chunk stays below this many bytes of
 * patches and dY rows (kk + mg rows of nb*oh*ow values), so that the
 * column buffer is still in a core's L2 cache (1 MiB here) when the
 * GEMM packs it: fewer images a chunk where a chunk of
 * WEIR_CONV_GRAD_DEPTH pixels would hold more (tgrad18: 32 images of a
 * 256-channel 4x4 layer made a 4.7 MB column buffer; 4 images of it take
 * 0.85x the time).  Not scaled with the L2 cache: on a 2 MiB L2 (tr20)
 * chunks of twice the size were no faster (the GEMM's own packed blocks
 * take that L2 too). */
#define WEIR_CONV_GRAD_COL_BYTES (768 << 10)

static const char dw_grad[] =
    "/* Input gradient of a depthwise convolution (one input channel per\n"
    " * filter): per (image, channel) plane, dx = 0, then for each kernel tap\n"
    " * (i, j) and output row p, the row of dy times w[i][j] added into the\n"
    " * input row it was read from (contiguous at unit stride).  Each plane "
    "is\n"
    " * one thread's. */\n"
    "static void weir_dwconv2d_grad_input_@S@(const @T@ *dy, const @T@ "
    "*w,\n"
    "                                         @T@ *dx, int64_t nc, int64_t "
    "c,\n"
    "                                         int64_t h, int64_t wd,\n"
    "                                         int64_t kh, int64_t kw,\n"
    "                                         int64_t oh, int64_t ow,\n"
    "                                         int64_t sh, int64_t sw,\n"
    "                                         int64_t dh, int64_t dw,\n"
    "                                         int64_t ph, int64_t pw) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static)\n"
    "#endif\n"
    "  for (int64_t pl = 0; pl < nc; pl++) {\n"
    "    const @T@ *dyc = dy + pl * oh * ow, *wc = w + (pl % c) * kh * kw;\n"
    "    @T@ *dxc = dx + pl * h * wd;\n"
    "    for (int64_t k = 0; k < h * wd; k++)\n"
    "      dxc[k] = (@T@)0;\n"
    "    for (int64_t i = 0; i < kh; i++) {\n"
    "      for (int64_t j = 0; j < kw; j++) {\n"
    "        const @T@ wv = wc[i * kw + j];\n"
    "        const int64_t off = j * dw - pw;\n"
    "        /* output columns whose input column is inside: [qlo, qhi) */\n"
    "        const int64_t qlo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
    "        int64_t qhi = wd - off > 0 ? (wd - off + sw - 1) / sw : 0;\n"
    "        if (qhi > ow)\n"
    "          qhi = ow;\n"
    "        for (int64_t p = 0; p < oh; p++) {\n"
    "          const int64_t ih = p * sh + i * dh - ph;\n"
    "          if (ih < 0 || ih >= h)\n"
    "            continue;\n"
    "          const @T@ *s = dyc + p * ow;\n"
    "          @T@ *d = dxc + ih * wd + off;\n"
    "          if (sw == 1) {\n"
    "#pragma omp simd\n"
    "            for (int64_t q = qlo; q < qhi; q++)\n"
    "              d[q] += wv * s[q];\n"
    "          } else {\n"
    "            for (int64_t q = qlo; q < qhi; q++)\n"
    "              d[q * sw] += wv * s[q];\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n"
    "\n"
    "/* Filter gradient of a depthwise convolution: dw[ch][i][j] = the sum\n"
    " * over images and output pixels of dy times the input it multiplied,\n"
    " * the images in order.  Each channel is one thread's. */\n"
    "static void weir_dwconv2d_grad_filter_@S@(const @T@ *dy, const @T@ "
    "*x,\n"
    "                                          @T@ *dwt, int64_t n,\n"
    "                                          int64_t c, int64_t h,\n"
    "                                          int64_t wd, int64_t kh,\n"
    "                                          int64_t kw, int64_t oh,\n"
    "                                          int64_t ow, int64_t sh,\n"
    "                                          int64_t sw, int64_t dh,\n"
    "                                          int64_t dw, int64_t ph,\n"
    "                                          int64_t pw) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static)\n"
    "#endif\n"
    "  for (int64_t ch = 0; ch < c; ch++) {\n"
    "    for (int64_t i = 0; i < kh; i++) {\n"
    "      for (int64_t j = 0; j < kw; j++) {\n"
    "        const int64_t off = j * dw - pw;\n"
    "        const int64_t qlo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
    "        int64_t qhi = wd - off > 0 ? (wd - off + sw - 1) / sw : 0;\n"
    "        if (qhi > ow)\n"
    "          qhi = ow;\n"
    "        @T@ acc = (@T@)0;\n"
    "        for (int64_t in = 0; in < n; in++) {\n"
    "          const @T@ *dyc = dy + (in * c + ch) * oh * ow;\n"
    "          const @T@ *xc = x + (in * c + ch) * h * wd;\n"
    "          for (int64_t p = 0; p < oh; p++) {\n"
    "            const int64_t ih = p * sh + i * dh - ph;\n"
    "            if (ih < 0 || ih >= h)\n"
    "              continue;\n"
    "            const @T@ *s = dyc + p * ow, *xr = xc + ih * wd + off;\n"
    "            @T@ r = (@T@)0;\n"
    "            if (sw == 1) {\n"
    "#pragma omp simd reduction(+ : r)\n"
    "              for (int64_t q = qlo; q < qhi; q++)\n"
    "                r += s[q] * xr[q];\n"
    "            } else {\n"
    "              for (int64_t q = qlo; q < qhi; q++)\n"
    "                r += s[q] * xr[q * sw];\n"
    "            }\n"
    "            acc += r;\n"
    "          }\n"
    "        }\n"
    "        dwt[(ch * kh + i) * kw + j] = acc;\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char grad_input[] =
    "/* Input gradient of a 2-D convolution on Weir's GEMM.  Unit stride:\n"
    " * per group, wf[cg x mg*kh*kw] = w_g transposed and flipped in both\n"
    " * spatial axes; per image, dx_g[cg x h*wd] = wf * patches(dy_g), the\n"
    " * patches of a convolution of dy_g (mg channels of oh x ow) with "
    "padding\n"
    " * dilation * (k - 1) - pad, gathered by the GEMM's packing.  Larger\n"
    " * strides: by phase where it applies (below), else per group and\n"
    " * chunk of nbs images, col[kk x nbs*oh*ow] =\n"
    " * w_g^T * dy_g (the chunk's rows of dy_g side by side), then col2im\n"
    " * into dx_g (zeroed first; threads split the (image, channel) pairs).\n"
    " * ws: the GEMM's packing buffers (gw bytes: gt slots of at least gs\n"
    " * bytes for the per-image GEMMs), then wf (and a chunk's product) or\n"
    " * col (and the chunk's rows of dy). */\n"
    "static int weir_wconv2d_grad_input_@S@(const @T@ *dy, const @T@ *w,\n"
    "                                       @T@ *dx, int64_t n, int64_t c,\n"
    "                                       int64_t h, int64_t wd, int64_t "
    "m,\n"
    "                                       int64_t kh, int64_t kw,\n"
    "                                       int64_t oh, int64_t ow,\n"
    "                                       int64_t groups, int64_t sh,\n"
    "                                       int64_t sw, int64_t dh,\n"
    "                                       int64_t dw, int64_t ph,\n"
    "                                       int64_t pw, int64_t nb,\n"
    "                                       int64_t nbs, int64_t gs,\n"
    "                                       int64_t gt, int64_t gw,\n"
    "                                       void *ws) {\n"
    "  const int64_t cg = c / groups, mg = m / groups, khw = kh * kw;\n"
    "  const int64_t kk = cg * khw, ohw = oh * ow, hw = h * wd;\n"
    "  @T@ *buf = (@T@ *)((char *)ws + gw);\n"
    "  int st = 0;\n"
    "  if (n == 0 || c == 0)\n"
    "    return 0;\n"
    "  if (ohw == 0 || mg == 0) {\n"
    "    for (int64_t k = 0; k < n * c * hw; k++)\n"
    "      dx[k] = (@T@)0;\n"
    "    return 0;\n"
    "  }\n"
    "  if (sh == 1 && sw == 1 && ph <= dh * (kh - 1) && pw <= dw * (kw - 1)) "
    "{\n"
    "    const int64_t fk = mg * khw;\n"
    "    for (int64_t g = 0; g < groups; g++) {\n"
    "      const @T@ *wg = w + g * mg * kk;\n"
    "      /* the flip is cg x mg x kh x kw elements read with a stride,\n"
    "       * split over the threads (a serial copy of a 256x256x3x3 filter\n"
    "       * is a serial part of every such step).  For chunks of images\n"
    "       * (packed once per chunk) it is stored transposed, wft[fk x cg]\n"
    "       * (the GEMM reads it with ta = 1): per output channel oc, its\n"
    "       * cg x khw values of w (contiguous) become khw rows of cg\n"
    "       * (contiguous), the taps in reverse order.  For one GEMM per\n"
    "       * image, which packs it again for every image, as wf: the\n"
    "       * packing reads MR whole rows of it. */\n"
    "      const int ta = nb > 1;\n"
    "      if (ta) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (cg * fk > 16384)\n"
    "#endif\n"
    "        for (int64_t oc = 0; oc < mg; oc++)\n"
    "          for (int64_t t = 0; t < khw; t++) {\n"
    "            const @T@ *from = wg + oc * kk + khw - 1 - t;\n"
    "            @T@ *to = buf + (oc * khw + t) * cg;\n"
    "            for (int64_t ic = 0; ic < cg; ic++)\n"
    "              to[ic] = from[ic * khw];\n"
    "          }\n"
    "      } else {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (cg * fk > 16384)\n"
    "#endif\n"
    "        for (int64_t ic = 0; ic < cg; ic++)\n"
    "          for (int64_t oc = 0; oc < mg; oc++)\n"
    "            for (int64_t t = 0; t < khw; t++)\n"
    "              buf[ic * fk + oc * khw + t] =\n"
    "                  wg[(oc * cg + ic) * khw + khw - 1 - t];\n"
    "      }\n"
    "      if (nb > 1) {\n"
    "        /* small maps: nb images per GEMM, o[cg x nb*hw] = wf * their\n"
    "         * patches side by side (gathered from dy by the GEMM's\n"
    "         * packing), then each image's rows copied into dx (one GEMM of\n"
    "         * nb*hw columns instead of nb GEMMs of hw columns that would\n"
    "         * each pack the whole flipped filter again) */\n"
    "        @T@ *o = buf + cg * fk;\n"
    "        const int64_t P = dh * (kh - 1) - ph, Q = dw * (kw - 1) - pw;\n"
    "        for (int64_t i0 = 0; i0 < n; i0 += nb) {\n"
    "          const int64_t cnt = n - i0 < nb ? n - i0 : nb, ld = cnt * hw;\n"
    "          /* the chunk's patches gathered from dy by the GEMM's packing\n"
    "           * (cnt images side by side: no column buffer) */\n"
    "          const weir_gemm_patches_@S@ im = {\n"
    "              dy + (i0 * m + g * mg) * ohw, oh, ow, kh, kw, wd, 1, 1,\n"
    "              dh, dw, P, Q, h, m * ohw};\n"
    "          st |= weir_gemm_run_@S@(1, 0, cg, ld, fk, (@T@)1, buf, cg, "
    "NULL,\n"
    "                                  ld, &im, (@T@)0, o, ld, NULL, ws);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) schedule(static) if (cg * ld > "
    "16384)\n"
    "#endif\n"
    "          for (int64_t ii = 0; ii < cnt; ii++)\n"
    "            for (int64_t ic = 0; ic < cg; ic++)\n"
    "              memcpy(dx + ((i0 + ii) * c + g * cg + ic) * hw,\n"
    "                     o + ic * ld + ii * hw, sizeof(@T@) * (size_t)hw);\n"
    "        }\n"
    "        continue;\n"
    "      }\n"
    "      /* one GEMM per image.  With as many images as threads or more\n"
    "       * (a multiple of the threads, or at least four each), the threads\n"
    "       * take whole images, each GEMM on one thread in the thread's own\n"
    "       * slot of the packing buffers (gs bytes each, gt slots): one\n"
    "       * parallel region instead of one per image, and the flipped\n"
    "       * filter packed once per image instead of once per image and\n"
    "       * thread.  Otherwise every GEMM is split over the threads. */\n"
    "      int nthr = 1;\n"
    "#ifdef _OPENMP\n"
    "      if (!omp_in_parallel())\n"
    "        nthr = omp_get_max_threads();\n"
    "#endif\n"
    "      if (nthr > gt)\n"
    "        nthr = (int)gt;\n"
    "      if (nthr > 1 && (n % nthr == 0 || n >= 4 * nthr)) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for num_threads(nthr) schedule(static) reduction(| : "
    "st)\n"
    "#endif\n"
    "        for (int64_t in = 0; in < n; in++) {\n"
    "          const weir_gemm_patches_@S@ im = {\n"
    "              dy + (in * m + g * mg) * ohw, oh, ow, kh, kw, wd, 1, 1,\n"
    "              dh, dw, dh * (kh - 1) - ph, dw * (kw - 1) - pw};\n"
    "          void *wt = ws;\n"
    "#ifdef _OPENMP\n"
    "          wt = (char *)ws + (size_t)omp_get_thread_num() * (size_t)gs;\n"
    "#endif\n"
    "          st |= weir_gemm_run_@S@(0, 0, cg, hw, fk, (@T@)1, buf, fk,\n"
    "                                  NULL, hw, &im, (@T@)0,\n"
    "                                  dx + (in * c + g * cg) * hw, hw,\n"
    "                                  NULL, wt);\n"
    "        }\n"
    "        continue;\n"
    "      }\n"
    "      for (int64_t in = 0; in < n; in++) {\n"
    "        const weir_gemm_patches_@S@ im = {\n"
    "            dy + (in * m + g * mg) * ohw, oh, ow, kh, kw, wd, 1, 1,\n"
    "            dh, dw, dh * (kh - 1) - ph, dw * (kw - 1) - pw};\n"
    "        st |= weir_gemm_run_@S@(0, 0, cg, hw, fk, (@T@)1, buf, fk, NULL,\n"
    "                                hw, &im, (@T@)0,\n"
    "                                dx + (in * c + g * cg) * hw, hw, NULL,\n"
    "                                ws);\n"
    "      }\n"
    "    }\n"
    "    return st;\n"
    "  }\n"
    "  /* strides above 1 without dilation: by phase (tr22).  Input row\n"
    "   * sh*a + r (phase r of sh) meets the taps i = r + ph (mod sh) only,\n"
    "   * at output row a + e_i, e_i = (r + ph - i) / sh: for phase (r, s) a\n"
    "   * unit-stride convolution of dy with the sub-kernel of those taps\n"
    "   * (khs x kws, flipped: e rises as i falls) and padding -e_min, one "
    "GEMM\n"
    "   * per chunk of nbs images whose packing gathers the patches from dy\n"
    "   * (no column buffer, no col2im), o[cg x nbs*hr*wr] = wf * patches,\n"
    "   * then each image's rows written into dx with the stride.  Phases no\n"
    "   * tap meets are zero.  Not 1x1 kernels (one phase of sh*sw has\n"
    "   * their only tap: the col2im below adds it into zeroed rows).  Where\n"
    "   * a phase's first tap lies below its row\n"
    "   * (e_min > 0: pads beyond the kernel's reach), the col2im below.\n"
    "   * buf: wf (at most cg x mg*kh*kw), then o. */\n"
    "  int phased = sh * sw > 1 && dh == 1 && dw == 1 && khw > 1;\n"
    "  for (int64_t r = 0; r < sh && phased; r++)\n"
    "    if ((r + ph) % sh < kh &&\n"
    "        r + ph - ((r + ph) % sh + (kh - 1 - (r + ph) % sh) / sh * sh) > "
    "0)\n"
    "      phased = 0;\n"
    "  for (int64_t q = 0; q < sw && phased; q++)\n"
    "    if ((q + pw) % sw < kw &&\n"
    "        q + pw - ((q + pw) % sw + (kw - 1 - (q + pw) % sw) / sw * sw) > "
    "0)\n"
    "      phased = 0;\n"
    "  if (phased) {\n"
    "    @T@ *wf = buf, *o = buf + cg * mg * khw;\n"
    "    for (int64_t g = 0; g < groups; g++)\n"
    "      for (int64_t r = 0; r < sh; r++)\n"
    "        for (int64_t q = 0; q < sw; q++) {\n"
    "          const int64_t hr = r < h ? (h - r + sh - 1) / sh : 0;\n"
    "          const int64_t wr = q < wd ? (wd - q + sw - 1) / sw : 0;\n"
    "          if (hr == 0 || wr == 0)\n"
    "            continue;\n"
    "          /* the phase's taps: i = imax - t*sh (t < khs), j likewise */\n"
    "          const int64_t ti = (r + ph) % sh, tj = (q + pw) % sw;\n"
    "          const int64_t khs = ti < kh ? (kh - 1 - ti) / sh + 1 : 0;\n"
    "          const int64_t kws = tj < kw ? (kw - 1 - tj) / sw + 1 : 0;\n"
    "          const int64_t imax = ti + (khs - 1) * sh, jmax = tj + (kws - 1) "
    "* sw;\n"
    "          /* -e_min, the padding of dy in the phase's convolution */\n"
    "          const int64_t P = (imax - r - ph) / sh, Q = (jmax - q - pw) / "
    "sw;\n"
    "          const int64_t fk = mg * khs * kws;\n"
    "          if (fk > 0) {\n"
    "            const @T@ *wg = w + g * mg * kk;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (cg * fk > 16384)\n"
    "#endif\n"
    "            for (int64_t ic = 0; ic < cg; ic++)\n"
    "              for (int64_t oc = 0; oc < mg; oc++)\n"
    "                for (int64_t t = 0; t < khs; t++)\n"
    "                  for (int64_t u = 0; u < kws; u++)\n"
    "                    wf[ic * fk + (oc * khs + t) * kws + u] =\n"
    "                        wg[(oc * cg + ic) * khw + (imax - t * sh) * kw +\n"
    "                           jmax - u * sw];\n"
    "          }\n"
    "          for (int64_t i0 = 0; i0 < n; i0 += nbs) {\n"
    "            const int64_t cnt = n - i0 < nbs ? n - i0 : nbs;\n"
    "            const int64_t pl = hr * wr, ld = cnt * pl;\n"
    "            if (fk > 0) {\n"
    "              const weir_gemm_patches_@S@ im = {\n"
    "                  dy + (i0 * m + g * mg) * ohw, oh, ow, khs, kws, wr, 1, "
    "1,\n"
    "                  1, 1, P, Q, hr, m * ohw};\n"
    "              st |= weir_gemm_run_@S@(0, 0, cg, ld, fk, (@T@)1, wf, fk, "
    "NULL,\n"
    "                                      ld, &im, (@T@)0, o, ld, NULL, ws);\n"
    "            }\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) schedule(static) if (cg * ld > "
    "16384)\n"
    "#endif\n"
    "            for (int64_t ii = 0; ii < cnt; ii++)\n"
    "              for (int64_t ic = 0; ic < cg; ic++) {\n"
    "                @T@ *d = dx + ((i0 + ii) * c + g * cg + ic) * hw + r * wd "
    "+ q;\n"
    "                const @T@ *src = o + ic * ld + ii * pl;\n"
    "                for (int64_t a = 0; a < hr; a++)\n"
    "                  for (int64_t b = 0; b < wr; b++)\n"
    "                    d[a * sh * wd + b * sw] =\n"
    "                        fk > 0 ? src[a * wr + b] : (@T@)0;\n"
    "              }\n"
    "          }\n"
    "        }\n"
    "    return st;\n"
    "  }\n"
    "  /* nbs images per GEMM: their rows of dy_g side by side in\n"
    "   * a[mg x nbs*oh*ow] (dy itself when nbs is 1), col[kk x nbs*oh*ow]\n"
    "   * = w_g^T * a, then col2im of every (image, channel) of the chunk\n"
    "   * (each pair one thread's) */\n"
    "  for (int64_t g = 0; g < groups; g++) {\n"
    "    for (int64_t i0 = 0; i0 < n; i0 += nbs) {\n"
    "      const int64_t cnt = n - i0 < nbs ? n - i0 : nbs, ld = cnt * ohw;\n"
    "      const @T@ *bp = dy + (i0 * m + g * mg) * ohw;\n"
    "      if (cnt > 1) {\n"
    "        @T@ *a = buf + kk * nbs * ohw;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) schedule(static) if (mg * ld > "
    "16384)\n"
    "#endif\n"
    "        for (int64_t im = 0; im < cnt; im++)\n"
    "          for (int64_t oc = 0; oc < mg; oc++)\n"
    "            memcpy(a + oc * ld + im * ohw,\n"
    "                   dy + ((i0 + im) * m + g * mg + oc) * ohw,\n"
    "                   sizeof(@T@) * (size_t)ohw);\n"
    "        bp = a;\n"
    "      }\n"
    "      st |= weir_gemm_run_@S@(1, 0, kk, ld, mg, (@T@)1, w + g * mg * kk, "
    "kk,\n"
    "                              bp, ld, NULL, (@T@)0, buf, ld, NULL, ws);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) schedule(static)\n"
    "#endif\n"
    "      for (int64_t im = 0; im < cnt; im++) {\n"
    "        for (int64_t ic = 0; ic < cg; ic++) {\n"
    "          @T@ *dxc = dx + ((i0 + im) * c + g * cg + ic) * hw;\n"
    "          for (int64_t k = 0; k < hw; k++)\n"
    "            dxc[k] = (@T@)0;\n"
    "          for (int64_t i = 0; i < kh; i++) {\n"
    "            for (int64_t j = 0; j < kw; j++) {\n"
    "              const @T@ *src = buf + ((ic * kh + i) * kw + j) * ld + im * "
    "ohw;\n"
    "              const int64_t off = j * dw - pw;\n"
    "              const int64_t qlo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
    "              int64_t qhi = wd - off > 0 ? (wd - off + sw - 1) / sw : "
    "0;\n"
    "              if (qhi > ow)\n"
    "                qhi = ow;\n"
    "              for (int64_t p = 0; p < oh; p++) {\n"
    "                const int64_t ih = p * sh + i * dh - ph;\n"
    "                if (ih < 0 || ih >= h)\n"
    "                  continue;\n"
    "                @T@ *d = dxc + ih * wd + off;\n"
    "                const @T@ *s = src + p * ow;\n"
    "                for (int64_t q = qlo; q < qhi; q++)\n"
    "                  d[q * sw] += s[q];\n"
    "              }\n"
    "            }\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  return st;\n"
    "}\n"
    "\n"
    "/* Filter gradient of a 2-D convolution on Weir's GEMM: per group and\n"
    " * chunk of nb images, col[kk x nb*oh*ow] the chunk's patches side by\n"
    " * side (zeros in the padding), a[mg x nb*oh*ow] dy_g's rows side by\n"
    " * side (dy itself when nb is 1), and dw_g[mg x kk] (+)= a * col^T (the\n"
    " * first chunk overwrites).  ws: the GEMM's packing buffers (gw bytes),\n"
    " * then col, then a. */\n"
    "static int weir_wconv2d_grad_filter_@S@(const @T@ *dy, const @T@ *x,\n"
    "                                        @T@ *dwt, int64_t n, int64_t c,\n"
    "                                        int64_t h, int64_t wd,\n"
    "                                        int64_t m, int64_t kh,\n"
    "                                        int64_t kw, int64_t oh,\n"
    "                                        int64_t ow, int64_t groups,\n"
    "                                        int64_t sh, int64_t sw,\n"
    "                                        int64_t dh, int64_t dw,\n"
    "                                        int64_t ph, int64_t pw,\n"
    "                                        int64_t nb, int64_t gw,\n"
    "                                        void *ws) {\n"
    "  const int64_t cg = c / groups, mg = m / groups;\n"
    "  const int64_t kk = cg * kh * kw, ohw = oh * ow, hw = h * wd;\n"
    "  @T@ *col = (@T@ *)((char *)ws + gw), *a = col + kk * nb * ohw;\n"
    "  int st = 0;\n"
    "  if (n == 0 || ohw == 0) {\n"
    "    for (int64_t k = 0; k < m * kk; k++)\n"
    "      dwt[k] = (@T@)0;\n"
    "    return 0;\n"
    "  }\n"
    "  for (int64_t g = 0; g < groups; g++) {\n"
    "    for (int64_t i0 = 0; i0 < n; i0 += nb) {\n"
    "      const int64_t cnt = n - i0 < nb ? n - i0 : nb, ld = cnt * ohw;\n"
    "      /* small planes (the 4x4 layers of a CIFAR ResNet, the 8x8 and\n"
    "       * 16x16 inputs of its stride-2 ones; not 1x1 kernels, which\n"
    "       * read each input once anyway): per\n"
    "       * (channel, image) x's plane once into a zero frame on the stack,\n"
    "       * then every tap's rows copied from it without bounds tests */\n"
    "      const int64_t Hp = (oh - 1) * sh + dh * (kh - 1) + 1;\n"
    "      const int64_t Wp = (ow - 1) * sw + dw * (kw - 1) + 1;\n"
    "      if (kh * kw > 1 && Hp * Wp <= 1024) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static)\n"
    "#endif\n"
    "        for (int64_t r = 0; r < cg * cnt; r++) {\n"
    "          const int64_t ic = r / cnt, im = r % cnt;\n"
    "          const @T@ *xc = x + ((i0 + im) * c + g * cg + ic) * hw;\n"
    "          @T@ pb[1024];\n"
    "          for (int64_t k = 0; k < Hp * Wp; k++)\n"
    "            pb[k] = (@T@)0;\n"
    "          /* pb[u][v] = x[u - ph][v - pw] */\n"
    "          for (int64_t u = ph > 0 ? ph : 0; u < Hp && u - ph < h; u++)\n"
    "            for (int64_t v = pw > 0 ? pw : 0; v < Wp && v - pw < wd; "
    "v++)\n"
    "              pb[u * Wp + v] = xc[(u - ph) * wd + v - pw];\n"
    "          for (int64_t i = 0; i < kh; i++)\n"
    "            for (int64_t j = 0; j < kw; j++) {\n"
    "              @T@ *d = col + ((ic * kh + i) * kw + j) * ld + im * ohw;\n"
    "              const @T@ *sp = pb + i * dh * Wp + j * dw;\n"
    "              for (int64_t p = 0; p < oh; p++) {\n"
    "                if (sw == 1) {\n"
    "                  memcpy(d + p * ow, sp + p * sh * Wp,\n"
    "                         sizeof(@T@) * (size_t)ow);\n"
    "                  continue;\n"
    "                }\n"
    "                for (int64_t q = 0; q < ow; q++)\n"
    "                  d[p * ow + q] = sp[p * sh * Wp + q * sw];\n"
    "              }\n"
    "            }\n"
    "        }\n"
    "      } else {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static)\n"
    "#endif\n"
    "      for (int64_t r = 0; r < kk * cnt; r++) {\n"
    "        const int64_t rr = r / cnt, im = r % cnt;\n"
    "        const int64_t ic = rr / (kh * kw), i = rr / kw % kh, j = rr % "
    "kw;\n"
    "        const @T@ *xc = x + ((i0 + im) * c + g * cg + ic) * hw;\n"
    "        @T@ *d = col + rr * ld + im * ohw;\n"
    "        const int64_t off = j * dw - pw;\n"
    "        const int64_t qlo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
    "        int64_t qhi = wd - off > 0 ? (wd - off + sw - 1) / sw : 0;\n"
    "        if (qhi > ow)\n"
    "          qhi = ow;\n"
    "        for (int64_t p = 0; p < oh; p++) {\n"
    "          const int64_t ih = p * sh + i * dh - ph;\n"
    "          @T@ *dr = d + p * ow;\n"
    "          if (ih < 0 || ih >= h || qlo >= qhi) {\n"
    "            for (int64_t q = 0; q < ow; q++)\n"
    "              dr[q] = (@T@)0;\n"
    "            continue;\n"
    "          }\n"
    "          const @T@ *s = xc + ih * wd + off;\n"
    "          for (int64_t q = 0; q < qlo; q++)\n"
    "            dr[q] = (@T@)0;\n"
    "          if (sw == 1)\n"
    "            for (int64_t q = qlo; q < qhi; q++)\n"
    "              dr[q] = s[q];\n"
    "          else\n"
    "            for (int64_t q = qlo; q < qhi; q++)\n"
    "              dr[q] = s[q * sw];\n"
    "          for (int64_t q = qhi; q < ow; q++)\n"
    "            dr[q] = (@T@)0;\n"
    "        }\n"
    "      }\n"
    "      }\n"
    "      const @T@ *ap = dy + (i0 * m + g * mg) * ohw;\n"
    "      int64_t lda = ohw;\n"
    "      if (cnt > 1) {\n"
    "        /* dy's rows side by side: a copy of the chunk's dy, split\n"
    "         * over the threads like the patches above */\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) schedule(static) if (mg * ld > "
    "16384)\n"
    "#endif\n"
    "        for (int64_t im = 0; im < cnt; im++)\n"
    "          for (int64_t oc = 0; oc < mg; oc++)\n"
    "            memcpy(a + oc * ld + im * ohw,\n"
    "                   dy + ((i0 + im) * m + g * mg + oc) * ohw,\n"
    "                   sizeof(@T@) * (size_t)ohw);\n"
    "        ap = a;\n"
    "        lda = ld;\n"
    "      }\n"
    "      st |= weir_gemm_run_@S@(0, 1, mg, kk, ld, (@T@)1, ap, lda, col, "
    "ld,\n"
    "                              NULL, i0 == 0 ? (@T@)0 : (@T@)1,\n"
    "                              dwt + g * mg * kk, kk, NULL, ws);\n"
    "    }\n"
    "  }\n"
    "  return st;\n"
    "}\n";

/* The per-tap filter gradient's 16 x 16 transpose, d[j][i] = s[i][j]
 * (rows lds and ldd apart): AVX-512 shuffles for f32 where the compiler
 * targets AVX-512, else a loop. */
static const char grad_tr16_avx512[] =
    "#if defined(__AVX512F__)\n"
    "#include <immintrin.h>\n"
    "static inline void weir_cg_tr16_@S@(const float *restrict s, int64_t "
    "lds,\n"
    "                                    float *restrict d, int64_t ldd) {\n"
    "  __m512 r[16], t[16];\n"
    "  for (int i = 0; i < 16; i++)\n"
    "    r[i] = _mm512_loadu_ps(s + i * lds);\n"
    "  /* pairs of rows interleaved, then pairs of pairs: lane k of r[4q +\n"
    "   * j] holds column 4k + j of rows 4q..4q+3 */\n"
    "  for (int i = 0; i < 16; i += 2) {\n"
    "    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);\n"
    "    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);\n"
    "  }\n"
    "  for (int i = 0; i < 16; i += 4) {\n"
    "    const __m512d a = _mm512_castps_pd(t[i]), b = "
    "_mm512_castps_pd(t[i + 2]);\n"
    "    const __m512d e = _mm512_castps_pd(t[i + 1]),\n"
    "                  f = _mm512_castps_pd(t[i + 3]);\n"
    "    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));\n"
    "    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));\n"
    "    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(e, f));\n"
    "    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(e, f));\n"
    "  }\n"
    "  /* lanes 0, 2 and 1, 3 of row groups 0 and 1 (2 and 3), then of\n"
    "   * those: column j is lane j / 4 of r[j % 4] of the four groups */\n"
    "  for (int j = 0; j < 4; j++) {\n"
    "    t[j] = _mm512_shuffle_f32x4(r[j], r[j + 4], 0x88);\n"
    "    t[j + 4] = _mm512_shuffle_f32x4(r[j], r[j + 4], 0xdd);\n"
    "    t[j + 8] = _mm512_shuffle_f32x4(r[j + 8], r[j + 12], 0x88);\n"
    "    t[j + 12] = _mm512_shuffle_f32x4(r[j + 8], r[j + 12], 0xdd);\n"
    "  }\n"
    "  for (int j = 0; j < 8; j++) {\n"
    "    _mm512_storeu_ps(d + j * ldd,\n"
    "                     _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88));\n"
    "    _mm512_storeu_ps(d + (j + 8) * ldd,\n"
    "                     _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd));\n"
    "  }\n"
    "}\n"
    "#else\n"
    "@LOOP@"
    "#endif\n";

static const char grad_tr16_loop[] =
    "static inline void weir_cg_tr16_@S@(const @T@ *restrict s, int64_t "
    "lds,\n"
    "                                    @T@ *restrict d, int64_t ldd) {\n"
    "  for (int i = 0; i < 16; i++)\n"
    "    for (int j = 0; j < 16; j++)\n"
    "      d[j * ldd + i] = s[i * lds + j];\n"
    "}\n";

/* The filter gradient of a unit-stride convolution of one group whose
 * im2col would be large (a CIFAR ResNet's 32 and 64 channels of 32x32 and
 * 16x16: nine times the input, transposed once more by the GEMM's
 * packing), as per-tap products on a copy of x whose MR-channel panels
 * are the GEMM microkernel's A panels as they lie: nothing is copied per
 * tap. */
static const char grad_taps[] =
    "/* Filter gradient of a unit-stride convolution (one group) without\n"
    " * im2col.  With hp = oh + dh*(kh-1), wp = ow + dw*(kw-1) and a chunk's\n"
    " * padded pixels numbered P = (im*hp + y)*wp + xx, tap t = (i, j) is\n"
    " *   dw[:, :, i, j]^T = xp[P + i*dh*wp + j*dw][:]^T * dyp^T\n"
    " * where xp is x zero-padded and dyp (m x P) is dy with zeros at y >= oh\n"
    " * or xx >= ow.  Per chunk of nb images: xq, xp in panels of MR\n"
    " * channels, xq[cb][P][MR] (channels past c zero), so that the MR x kc\n"
    " * A panel of tap t, channel panel cb and pixels [k0, k0 + kc) is\n"
    " * xq[cb] + (k0 + shift(t)) * MR as it lies; per slice of at most KC\n"
    " * pixels, dyp^T in NR-wide B panels (bq, columns past m zero); then\n"
    " * the microkernel per (tap, channel panel, B panel) adds into\n"
    " * part[t*c + ic][oc].  A work item is a chunk and a share of its\n"
    " * kh*kw*ncb row panels (the whole when there are at least as many\n"
    " * chunks as threads, else one of nthr shares: each item then builds\n"
    " * xq and bq for itself); every element is computed by one item with\n"
    " * the same slices in the same order, and the chunks' partials are\n"
    " * added in chunk order: the result does not depend on the thread\n"
    " * count.  ws: the partials, then nt slots of slot bytes (xq, bq). */\n"
    "static int weir_wconv2d_grad_taps_@S@(const @T@ *dy, const @T@ *x,\n"
    "                                      @T@ *dwt, int64_t n, int64_t c,\n"
    "                                      int64_t h, int64_t wd, int64_t m,\n"
    "                                      int64_t kh, int64_t kw,\n"
    "                                      int64_t oh, int64_t ow,\n"
    "                                      int64_t dh, int64_t dw,\n"
    "                                      int64_t ph, int64_t pw, int64_t "
    "nb,\n"
    "                                      int64_t nt, int64_t slot, void "
    "*ws) {\n"
    "  const int64_t hp = oh + dh * (kh - 1), wp = ow + dw * (kw - 1);\n"
    "  const int64_t khw = kh * kw, hw = h * wd, ohw = oh * ow, pp = hp * wp;\n"
    "  const int64_t nn = khw * c, ncb = (c + @MR@ - 1) / @MR@;\n"
    "  const int64_t rows = khw * ncb;\n"
    "  const int64_t ext = dh * (kh - 1) * wp + dw * (kw - 1);\n"
    "  const int64_t nch = (n + nb - 1) / nb, xs = nb * pp + ext;\n"
    "  const size_t xbytes =\n"
    "      ((size_t)(ncb * xs * @MR@) * sizeof(@T@) + 63) / 64 * 64;\n"
    "  @T@ *part = (@T@ *)ws;\n"
    "  char *slots =\n"
    "      (char *)ws + ((size_t)(nch * m * nn) * sizeof(@T@) + 63) / 64 * "
    "64;\n"
    "  int nthr = 1;\n"
    "  if (n == 0 || ohw == 0) {\n"
    "    for (int64_t k = 0; k < m * nn; k++)\n"
    "      dwt[k] = (@T@)0;\n"
    "    return 0;\n"
    "  }\n"
    "#ifdef _OPENMP\n"
    "  if (!omp_in_parallel())\n"
    "    nthr = omp_get_max_threads();\n"
    "#endif\n"
    "  if (nthr > nt)\n"
    "    nthr = (int)nt;\n"
    "  /* shares of a chunk's row panels: 1, or nthr when the chunks are\n"
    "   * fewer than the threads */\n"
    "  const int64_t ns = nch >= nthr ? 1 : nthr;\n"
    "  if (nthr > nch * ns)\n"
    "    nthr = (int)(nch * ns);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for num_threads(nthr) schedule(static) if (nthr > "
    "1)\n"
    "#endif\n"
    "  for (int64_t it = 0; it < nch * ns; it++) {\n"
    "#ifdef _OPENMP\n"
    "    const int64_t tid = omp_get_thread_num();\n"
    "#else\n"
    "    const int64_t tid = 0;\n"
    "#endif\n"
    "    const int64_t ch = it / ns, sh = it % ns;\n"
    "    const int64_t r0 = rows * sh / ns, r1 = rows * (sh + 1) / ns;\n"
    "    char *sl = slots + (size_t)tid * (size_t)slot;\n"
    "    @T@ *xq = (@T@ *)sl, *bq = (@T@ *)(sl + xbytes);\n"
    "    const int64_t i0 = ch * nb, cnt = n - i0 < nb ? n - i0 : nb;\n"
    "    const int64_t kq = cnt * pp;\n"
    "    /* xq[cb][P][l] = xp[P][cb*MR + l], element (ic, P) at XQ(ic, P):\n"
    "     * a padded row at a time, blocks of 16 channels by 16 pixels of an\n"
    "     * input row transposed at once, the rest one by one */\n"
    "#define XQ(ic, P) xq[((ic) / @MR@ * xs + (P)) * @MR@ + (ic) % @MR@]\n"
    "    for (int64_t im = 0; im < cnt; im++) {\n"
    "      for (int64_t y = 0; y < hp; y++) {\n"
    "        const int64_t p0 = im * pp + y * wp, sy = y - ph;\n"
    "        /* padded columns [xx0, xx1) are input columns [xx0-pw, xx1-pw) "
    "*/\n"
    "        int64_t xx0 = pw > 0 ? pw : 0;\n"
    "        int64_t xx1 = wd + pw < wp ? wd + pw : wp;\n"
    "        if (sy < 0 || sy >= h)\n"
    "          xx0 = xx1 = wp;\n"
    "        for (int64_t cb = 0; cb < ncb; cb++) {\n"
    "          @T@ *d = xq + (cb * xs + p0) * @MR@;\n"
    "          for (int64_t k = 0; k < xx0 * @MR@; k++)\n"
    "            d[k] = (@T@)0;\n"
    "          for (int64_t k = xx1 * @MR@; k < wp * @MR@; k++)\n"
    "            d[k] = (@T@)0;\n"
    "        }\n"
    "        const int64_t nx = xx1 - xx0;\n"
    "        if (nx <= 0)\n"
    "          continue;\n"
    "        const @T@ *s = x + (i0 + im) * c * hw + sy * wd + (xx0 - pw);\n"
    "        const int64_t q0 = p0 + xx0;\n"
    "        int64_t ic = 0;\n"
    "        for (; ic + 16 <= c; ic += 16) {\n"
    "          int64_t u = 0;\n"
    "          for (; u + 16 <= nx; u += 16) {\n"
    "            @T@ tb[256];\n"
    "            weir_cg_tr16_@S@(s + ic * hw + u, hw, tb, 16);\n"
    "            /* a pixel's 16 channels (ic a multiple of 16): 16 / MR\n"
    "             * panels' rows, or a part of one panel's row */\n"
    "            for (int64_t v = 0; v < 16; v++) {\n"
    "              if (16 % @MR@ == 0)\n"
    "                for (int64_t l = 0; l < 16; l += @MR@)\n"
    "                  memcpy(&XQ(ic + l, q0 + u + v), tb + v * 16 + l,\n"
    "                         sizeof(@T@) * @MR@);\n"
    "              else if (@MR@ % 16 == 0)\n"
    "                memcpy(&XQ(ic, q0 + u + v), tb + v * 16,\n"
    "                       sizeof(@T@) * 16);\n"
    "              else\n"
    "                for (int64_t l = 0; l < 16; l++)\n"
    "                  XQ(ic + l, q0 + u + v) = tb[v * 16 + l];\n"
    "            }\n"
    "          }\n"
    "          for (; u < nx; u++)\n"
    "            for (int64_t l = 0; l < 16; l++)\n"
    "              XQ(ic + l, q0 + u) = s[(ic + l) * hw + u];\n"
    "        }\n"
    "        for (; ic < ncb * @MR@; ic++)\n"
    "          for (int64_t u = 0; u < nx; u++)\n"
    "            XQ(ic, q0 + u) = ic < c ? s[ic * hw + u] : (@T@)0;\n"
    "      }\n"
    "    }\n"
    "#undef XQ\n"
    "    for (int64_t cb = 0; cb < ncb; cb++)\n"
    "      for (int64_t k = kq * @MR@; k < (kq + ext) * @MR@; k++)\n"
    "        xq[cb * xs * @MR@ + k] = (@T@)0;\n"
    "    @T@ *pt = part + ch * m * nn;\n"
    "    /* B panels of pn columns (whole vectors, at most NR; no panel of\n"
    "     * one vector after wider ones, whose tile would have a third of\n"
    "     * the accumulators), and the columns the microkernel reads: whole\n"
    "     * vectors of the last panel's */\n"
    "    const int64_t mv = (m + @VL@ - 1) / @VL@, nrv = @NR@ / @VL@;\n"
    "    const int64_t pn =\n"
    "        (mv <= nrv ? mv : mv % nrv == 1 && nrv > 2 ? nrv - 1 : nrv) * "
    "@VL@;\n"
    "    const int64_t npw = (m + pn - 1) / pn;\n"
    "    const int64_t mz = (npw - 1) * pn +\n"
    "                       (m - (npw - 1) * pn + @VL@ - 1) / @VL@ * @VL@;\n"
    "    /* an image's pixels that meet dy are its first oh padded rows:\n"
    "     * slices of at most KC of them, image by image (the padded rows\n"
    "     * below would only add zeros) */\n"
    "    const int64_t kv = oh * wp;\n"
    "    for (int64_t im = 0; im < cnt; im++)\n"
    "    for (int64_t k1 = 0; k1 < kv; k1 += @KC@) {\n"
    "      const int64_t kc = kv - k1 < @KC@ ? kv - k1 : @KC@;\n"
    "      const int64_t k0 = im * pp + k1, acc = im > 0 || k1 > 0;\n"
    "      /* bq: B panel q at q * kc * pn, row kk = pixel k0 + kk, column\n"
    "       * v = output channel q * pn + v: element (oc, kk) at BQ(oc, kk).\n"
    "       * A slice is runs of padded rows: the first nv pixels of a run\n"
    "       * are dy's (blocks of 16 channels by 16 pixels transposed\n"
    "       * straight into the panel where pn is a multiple of 16), the\n"
    "       * rest zero, and so are the columns past m */\n"
    "#define BQ(oc, kk) bq[(oc) / pn * kc * pn + (kk) * pn + (oc) % pn]\n"
    "      int64_t y = k1 / wp, xx = k1 % wp;\n"
    "      for (int64_t kk = 0; kk < kc;) {\n"
    "        const int64_t run = wp - xx < kc - kk ? wp - xx : kc - kk;\n"
    "        int64_t nv = ow - xx;\n"
    "        nv = nv < 0 ? 0 : nv > run ? run : nv;\n"
    "        const @T@ *s = dy + (i0 + im) * m * ohw + y * ow + xx;\n"
    "        int64_t oc = 0;\n"
    "        for (; oc + 16 <= m && nv > 0; oc += 16) {\n"
    "          int64_t u = 0;\n"
    "          for (; u + 16 <= nv; u += 16) {\n"
    "            if (pn % 16 == 0) {\n"
    "              weir_cg_tr16_@S@(s + oc * ohw + u, ohw, &BQ(oc, kk + u), "
    "pn);\n"
    "              continue;\n"
    "            }\n"
    "            /* 16 channels across two panels (pn of 8 or 24) */\n"
    "            @T@ tb[256];\n"
    "            weir_cg_tr16_@S@(s + oc * ohw + u, ohw, tb, 16);\n"
    "            for (int64_t v = 0; v < 16; v++)\n"
    "              for (int64_t l = 0; l < 16; l++)\n"
    "                BQ(oc + l, kk + u + v) = tb[v * 16 + l];\n"
    "          }\n"
    "          for (; u < nv; u++)\n"
    "            for (int64_t l = 0; l < 16; l++)\n"
    "              BQ(oc + l, kk + u) = s[(oc + l) * ohw + u];\n"
    "        }\n"
    "        for (; oc < mz; oc++)\n"
    "          for (int64_t u = 0; u < nv; u++)\n"
    "            BQ(oc, kk + u) = oc < m ? s[oc * ohw + u] : (@T@)0;\n"
    "        for (int64_t u = nv; u < run; u++)\n"
    "          for (int64_t l = 0; l < mz; l++)\n"
    "            BQ(l, kk + u) = (@T@)0;\n"
    "        kk += run;\n"
    "        xx += run;\n"
    "        if (xx == wp) {\n"
    "          xx = 0;\n"
    "          y++;\n"
    "        }\n"
    "      }\n"
    "#undef BQ\n"
    "      for (int64_t r = r0; r < r1; r++) {\n"
    "        const int64_t t = r / ncb, cb = r % ncb;\n"
    "        const int64_t mr = c - cb * @MR@ < @MR@ ? c - cb * @MR@ : @MR@;\n"
    "        const @T@ *pa =\n"
    "            xq + (cb * xs + k0 + t / kw * dh * wp + t % kw * dw) * "
    "@MR@;\n"
    "        @T@ *pc = pt + (t * c + cb * @MR@) * m;\n"
    "        for (int64_t q = 0; q < npw; q++) {\n"
    "          const int64_t nr = m - q * pn < pn ? m - q * pn : pn;\n"
    "          const @T@ *pb = bq + q * kc * pn;\n"
    "          @T@ *pcc = pc + q * pn;\n"
    "          switch ((nr + @VL@ - 1) / @VL@) {\n"
    "@CASES@"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  /* dw[oc][ic][t]: the chunks' partials added in chunk order, a row\n"
    "   * t*c + ic of them and 64 output channels at a time */\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (m * nn * nch > 32768)\n"
    "#endif\n"
    "  for (int64_t rw = 0; rw < nn; rw++) {\n"
    "    const int64_t t = rw / c, ic = rw % c;\n"
    "    for (int64_t o0 = 0; o0 < m; o0 += 64) {\n"
    "      const int64_t no = m - o0 < 64 ? m - o0 : 64;\n"
    "      @T@ acc[64];\n"
    "      for (int64_t o = 0; o < no; o++)\n"
    "        acc[o] = (@T@)0;\n"
    "      for (int64_t ch = 0; ch < nch; ch++) {\n"
    "        const @T@ *pr = part + (ch * nn + rw) * m + o0;\n"
    "        for (int64_t o = 0; o < no; o++)\n"
    "          acc[o] += pr[o];\n"
    "      }\n"
    "      for (int64_t o = 0; o < no; o++)\n"
    "        dwt[((o0 + o) * c + ic) * khw + t] = acc[o];\n"
    "    }\n"
    "  }\n"
    "  return 0;\n"
    "}\n";

/* ------------------------------------------------------------ emitter */

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean dim_const(const WeirContainer *c, guint d, gint64 *v) {
  return weir_expr_is_const(dim(c, d), v);
}

/* kind: 'f' filter gradient (like "im2col"), 'i' input gradient (like
 * "col2im"). */
static gboolean grad_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char kind, char **reason) {
  const WeirNativeImpl *like =
      weir_native_lookup(n->op, kind == 'f' ? "im2col" : "col2im");
  if (!like) {
    *reason = g_strdup("needs the BLAS-based implementation's checks, which "
                       "is not registered");
    return FALSE;
  }
  if (!like->accepts(g, s, n, reason))
    return FALSE;
  return TRUE;
}

static gboolean grad_filter_accepts(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n, char **reason) {
  return grad_accepts(g, s, n, 'f', reason);
}

static gboolean grad_input_accepts(const WeirGraph *g, const WeirState *s,
                                   const WeirNode *n, char **reason) {
  return grad_accepts(g, s, n, 'i', reason);
}

static gboolean ints2(const WeirNode *n, const char *name, gint64 *v) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (!a || a->type != WEIR_ATTR_INTS || a->ints->len < 2)
    return FALSE;
  v[0] = g_array_index(a->ints, gint64, 0);
  v[1] = g_array_index(a->ints, gint64, 1);
  return TRUE;
}

static void emit_header(WeirNativeEmit *e, const char *what) {
  g_autofree char *l = weir_kernel_comment_label(e->n);
  g_string_append_printf(e->code, "/* %s '%s' (node %u): %s */\n", e->n->op, l,
                         e->n->id, what);
}

/* round64(bytes) */
static WeirExpr *round64(WeirExpr *bytes) {
  g_autoptr(WeirExpr) b = bytes;
  g_autoptr(WeirExpr) c63 = weir_expr_const(63);
  g_autoptr(WeirExpr) c64 = weir_expr_const(64);
  g_autoptr(WeirExpr) s = weir_expr_add(b, c63);
  g_autoptr(WeirExpr) q = weir_expr_floordiv(s, c64);
  return weir_expr_mul(q, c64);
}

static gint64 r64(gint64 bytes) {
  return (bytes + 63) / 64 * 64;
}

/* The columns of the per-tap path's B panels for m output channels: the
 * helper's panel width pn (whole vectors, at most NR; a one-vector panel
 * after wider ones avoided) times the number of panels. */
static gint64 taps_panel_cols(gint64 m, gint64 vl, gint64 nr) {
  const gint64 mv = (m + vl - 1) / vl, nrv = MAX(nr / vl, 1);
  const gint64 pwv = mv <= nrv ? mv : mv % nrv == 1 && nrv > 2 ? nrv - 1 : nrv;
  const gint64 pw = MAX(pwv, 1) * vl;
  return (m + pw - 1) / pw * pw;
}

/* The filter gradient's per-tap path (grad_taps) when it applies: one
 * group, unit stride, a kernel of more than one tap, at least 16 input and
 * output channels (the products' rows and columns; fewer, and the
 * microkernel's tiles are mostly padding), every size a constant, and
 * padded maps at most 60% larger than the output (the padded pixels are
 * multiplied too: a CIFAR ResNet's 32x32, 16x16 and 8x8 maps are 13%,
 * 27% and 56% larger, and the per-tap path is still faster than im2col on
 * the 8x8 layer; its 4x4 maps, 125%, keep im2col).  Chunks
 * of nb images, nb the power of two that comes closest to 2048 padded
 * pixels from below, so that a chunk's xq and dyp stay in the L2 cache,
 * halved while that leaves fewer chunks than threads.
 * Emits the call and returns TRUE, or FALSE (nothing emitted) where the
 * path does not apply. */
static gboolean taps_emit(WeirNativeEmit *e, const WeirGemmBlocking *bl,
                          const gint64 *st, const gint64 *p, const gint64 *d,
                          gint64 group) {
  const WeirContainer *dy = e->in[0].c, *xc = e->in[1].c, *wc = e->out[0].c;
  gint64 n, c, h, w, m, kh, kw, oh, ow;
  if (group != 1 || st[0] != 1 || st[1] != 1 || !dim_const(xc, 0, &n) ||
      !dim_const(xc, 1, &c) || !dim_const(xc, 2, &h) || !dim_const(xc, 3, &w) ||
      !dim_const(wc, 0, &m) || !dim_const(wc, 2, &kh) ||
      !dim_const(wc, 3, &kw) || !dim_const(dy, 2, &oh) ||
      !dim_const(dy, 3, &ow) || kh * kw < 2 || c < 16 || m < 16 || n < 1 ||
      oh < 1 || ow < 1)
    return FALSE;
  const gint64 hp = oh + d[0] * (kh - 1), wp = ow + d[1] * (kw - 1);
  const gint64 sz = e->out[0].c->dtype == WEIR_DTYPE_F64 ? 8 : 4;
  /* (the products run over an image's first oh padded rows, in slices
   * that end with the image: on 4x4 maps those slices are 24 pixels
   * deep, and the microkernel's tile loads and stores outweigh the
   * im2col they save: 6.9 against 5.2 ms on the 256-channel layer) */
  if (10 * hp * wp > 16 * oh * ow)
    return FALSE;
  const guint threads = MAX(bl->threads, 1);
  gint64 nb = MAX(1, 2048 / (hp * wp));
  while (nb & (nb - 1))
    nb &= nb - 1;
  /* at least a chunk per thread where the batch allows (else the threads
   * would each build the same chunk's copy of x) */
  while (nb > 1 && (n + nb - 1) / nb < (gint64)threads)
    nb /= 2;
  const gint64 nch = (n + nb - 1) / nb;
  nb = (n + nch - 1) / nch;
  const gint64 ext = d[0] * (kh - 1) * wp + d[1] * (kw - 1);
  const gint64 ncb = (c + bl->mr - 1) / bl->mr;
  /* the B panels' columns: as the helper's pn rule, never more than
   * whole NR-wide panels */
  const gint64 npad = MAX((m + bl->nr - 1) / bl->nr * bl->nr,
                          taps_panel_cols(m, bl->vl, bl->nr));
  const gint64 slot =
      r64(ncb * (nb * hp * wp + ext) * bl->mr * sz) + r64(npad * bl->kc * sz);
  const gint64 parts = r64(nch * kh * kw * m * c * sz);
  /* many channels on large maps (an ImageNet ResNet's first stages) would
   * need tens of MB of partials and slots; im2col's GEMMs reuse each
   * column enough there anyway */
  if (parts > WEIR_CONV_GRAD_TAPS_BYTES || slot > WEIR_CONV_GRAD_TAPS_BYTES)
    return FALSE;
  const gint64 total = parts + threads * slot;
  const char *ctype = sz == 8 ? "double" : "float";
  g_autofree char *helper =
      g_strdup_printf("weir_wconv2d_grad_taps_%s", bl->id);
  /* the transpose first (its own helper, one per GEMM id) */
  GString *tr = g_string_new(sz == 4 ? grad_tr16_avx512 : grad_tr16_loop);
  g_string_replace(tr, "@LOOP@", grad_tr16_loop, 0);
  g_string_replace(tr, "@T@", ctype, 0);
  g_string_replace(tr, "@S@", bl->id, 0);
  g_autofree char *trname = g_strdup_printf("weir_cg_tr16_%s", bl->id);
  e->helper(e, trname, tr->str);
  g_string_free(tr, TRUE);
  GString *t = g_string_new(grad_taps);
  /* the microkernel of the node's GEMM (weir_gemm_ukr<nv>_<id>), by the
   * number of vectors of the B panel's columns */
  GString *cases = g_string_new(NULL);
  for (guint nv = 1; nv <= bl->nv; nv++) {
    g_autofree char *label =
        nv == bl->nv ? g_strdup("default") : g_strdup_printf("case %u", nv);
    g_string_append_printf(
        cases,
        "          %s: weir_gemm_ukr%u_@S@(kc, pa, pb, pn, pcc, "
        "m, mr, nr, (int)acc, NULL, pa); break;\n",
        label, nv);
  }
  g_string_replace(t, "@CASES@", cases->str, 0);
  g_string_free(cases, TRUE);
  char buf[32];
  g_string_replace(t, "@T@", ctype, 0);
  g_string_replace(t, "@S@", bl->id, 0);
  g_snprintf(buf, sizeof buf, "%u", bl->mr);
  g_string_replace(t, "@MR@", buf, 0);
  g_snprintf(buf, sizeof buf, "%u", bl->kc);
  g_string_replace(t, "@KC@", buf, 0);
  g_snprintf(buf, sizeof buf, "%u", bl->nr);
  g_string_replace(t, "@NR@", buf, 0);
  g_snprintf(buf, sizeof buf, "%u", bl->vl);
  g_string_replace(t, "@VL@", buf, 0);
  e->helper(e, helper, t->str);
  g_string_free(t, TRUE);
  g_autofree char *ws = weir_kernel_scratch_arg(e, weir_expr_const(total));
  emit_header(e, "weir (per-tap products on channel panels of x)");
  g_string_append_printf(
      e->code,
      "%s |= weir_wconv2d_grad_taps_%s(%s, %s, %s, %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT ", %s);\n",
      e->status, bl->id, e->in[0].ptr, e->in[1].ptr, e->out[0].ptr, n, c, h, w,
      m, kh, kw, oh, ow, d[0], d[1], p[0], p[1], nb, threads, slot, ws);
  return TRUE;
}

static gboolean grad_emit(WeirNativeEmit *e, char kind, GError **error) {
  const WeirContainer *dy = e->in[0].c, *a = e->in[1].c, *out = e->out[0].c;
  /* image sizes from X (dX for the input gradient), kernel sizes from W */
  const WeirContainer *xc = kind == 'f' ? a : out;
  const WeirContainer *wc = kind == 'f' ? out : a;
  gint64 k[2], st[2], p[2], d[2];
  if (!ints2(e->n, "kernel_shape", k) || !ints2(e->n, "strides", st) ||
      !ints2(e->n, "pads", p) || !ints2(e->n, "dilations", d)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "node %u: kernel_shape, strides, pads and dilations must list "
                "two spatial values",
                e->n->id);
    return FALSE;
  }
  gint64 group = weir_node_attr_int(e->n, "group", 1);
  g_autofree char *n = e->expr_c(e, dim(xc, 0)), *c = e->expr_c(e, dim(xc, 1)),
                  *h = e->expr_c(e, dim(xc, 2)), *w = e->expr_c(e, dim(xc, 3)),
                  *m = e->expr_c(e, dim(wc, 0)), *kh = e->expr_c(e, dim(wc, 2)),
                  *kw = e->expr_c(e, dim(wc, 3)),
                  *oh = e->expr_c(e, dim(dy, 2)),
                  *ow = e->expr_c(e, dim(dy, 3));
  gint64 cv, wcin;
  gboolean depthwise = group > 1 && dim_const(xc, 1, &cv) && cv == group &&
                       dim_const(wc, 1, &wcin) && wcin == 1 &&
                       dim_const(wc, 0, &cv) && cv == group;
  const char *op = kind == 'f' ? "filter" : "input";
  WeirDType dt = out->dtype;
  const char *sfx = dt == WEIR_DTYPE_F64 ? "f64" : "f32";
  const char *ctype = dt == WEIR_DTYPE_F64 ? "double" : "float";
  if (depthwise) {
    emit_header(e, "weir (depthwise, direct)");
    g_autofree char *dname = g_strdup_printf("weir_dwconv2d_grad_%s", sfx);
    GString *dtext = g_string_new(dw_grad);
    g_string_replace(dtext, "@T@", ctype, 0);
    g_string_replace(dtext, "@S@", sfx, 0);
    e->helper(e, dname, dtext->str);
    g_string_free(dtext, TRUE);
    if (kind == 'f')
      g_string_append_printf(
          e->code,
          "weir_dwconv2d_grad_filter_%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, "
          "%s, %s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
          ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
          ", %" G_GINT64_FORMAT ");\n",
          sfx, e->in[0].ptr, e->in[1].ptr, e->out[0].ptr, n, c, h, w, kh, kw,
          oh, ow, st[0], st[1], d[0], d[1], p[0], p[1]);
    else
      g_string_append_printf(
          e->code,
          "weir_dwconv2d_grad_input_%s(%s, %s, %s, (%s) * (%s), %s, %s, %s, "
          "%s, %s, %s, %s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
          ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
          ", %" G_GINT64_FORMAT ");\n",
          sfx, e->in[0].ptr, e->in[1].ptr, e->out[0].ptr, n, c, c, h, w, kh, kw,
          oh, ow, st[0], st[1], d[0], d[1], p[0], p[1]);
    return TRUE;
  }
  WeirGemmBlocking bl;
  if (!weir_kernel_gemm_record(e, dt, &bl, error))
    return FALSE;
  if (kind == 'f' && taps_emit(e, &bl, st, p, d, group))
    return TRUE;
  g_autoptr(WeirExpr) groups = weir_expr_const(group);
  g_autoptr(WeirExpr) khw = weir_expr_mul(dim(wc, 2), dim(wc, 3));
  g_autoptr(WeirExpr) kk = weir_expr_mul(dim(wc, 1), khw); /* C/g*kh*kw */
  g_autoptr(WeirExpr) mg = weir_expr_floordiv(dim(wc, 0), groups);
  g_autoptr(WeirExpr) cg = weir_expr_floordiv(dim(xc, 1), groups);
  g_autoptr(WeirExpr) ohw = weir_expr_mul(dim(dy, 2), dim(dy, 3));
  g_autoptr(WeirExpr) hw = weir_expr_mul(dim(xc, 2), dim(xc, 3));
  g_autoptr(WeirExpr) four = weir_expr_const(dt == WEIR_DTYPE_F64 ? 8 : 4);
  const gint64 esz = dt == WEIR_DTYPE_F64 ? 8 : 4;
  g_autoptr(WeirExpr) gwork = NULL, rest = NULL, gslot = NULL;
  gint64 nb = 1, nbs = 1;
  const gint64 gslots = MAX(bl.threads, 1);
  if (kind == 'i') {
    /* unit stride: m = cg, n = h*w, k = mg*kh*kw and the flipped filter;
     * else m = kk, n = oh*ow, k = mg and the column buffer */
    gboolean unit = st[0] == 1 && st[1] == 1;
    /* unit stride on maps smaller than WEIR_CONV_GRAD_DEPTH with at
     * least as many input channels per group as pixels (packing the
     * flipped filter, cg x fk, once per image then costs more than
     * gathering the image's patches, fk x hw): nb images per GEMM, their
     * patches gathered by the GEMM's packing, the product (cg x nb*hw)
     * after the flipped filter.  Whatever the size of the filter against
     * the L2 cache (tr21: without a column buffer the 128-channel 8x8
     * layer's 576 KiB filter, one GEMM per image since tr20, took 0.87
     * times the CPU time in chunks) */
    g_autoptr(WeirExpr) fk = weir_expr_mul(mg, khw);
    gint64 hw_v = 0, n_v = 0, cg_v = 0;
    if (unit && weir_expr_is_const(hw, &hw_v) &&
        weir_expr_is_const(dim(xc, 0), &n_v) && weir_expr_is_const(cg, &cg_v) &&
        hw_v > 0 && cg_v >= hw_v) {
      nb = (WEIR_CONV_GRAD_DEPTH + hw_v - 1) / hw_v;
      nb = CLAMP(nb, 1, MAX(n_v, 1));
    }
    g_autoptr(WeirExpr) nbe = weir_expr_const(nb);
    g_autoptr(WeirExpr) depth = weir_expr_mul(nbe, hw);
    g_autoptr(WeirExpr) w1 =
        weir_kernel_gemm_work_bytes(dt, &bl, cg, depth, fk);
    /* one thread's slot of w1 (gslots of them, each 64-byte rounded):
     * what a per-image GEMM run on one thread packs into */
    g_autoptr(WeirExpr) nslots = weir_expr_const(gslots);
    gslot = weir_expr_floordiv(w1, nslots);
    g_autoptr(WeirExpr) flip0 = weir_expr_mul(cg, fk);
    g_autoptr(WeirExpr) flip = NULL;
    if (nb > 1) {
      g_autoptr(WeirExpr) cols = weir_expr_mul(cg, depth);
      flip = weir_expr_add(flip0, cols);
    } else {
      flip = weir_expr_ref(flip0);
    }
    /* the col2im path (other strides, or pads beyond the kernel's
     * reach): nbs images per GEMM so that it has at least
     * WEIR_CONV_GRAD_DEPTH columns, with their patches (kk x nbs*oh*ow)
     * and, for more than one image, their rows of dy (mg x nbs*oh*ow).
     * Left at 1 where the unit-stride path is sure to run. */
    gint64 khv = 0, kwv = 0, ohw_v = 0;
    gboolean implicit = unit && dim_const(wc, 2, &khv) &&
                        dim_const(wc, 3, &kwv) && p[0] <= d[0] * (khv - 1) &&
                        p[1] <= d[1] * (kwv - 1);
    if (!implicit && weir_expr_is_const(ohw, &ohw_v) &&
        weir_expr_is_const(dim(xc, 0), &n_v) && ohw_v > 0) {
      nbs = (WEIR_CONV_GRAD_DEPTH + ohw_v - 1) / ohw_v;
      nbs = CLAMP(nbs, 1, MAX(n_v, 1));
    }
    g_autoptr(WeirExpr) nbse = weir_expr_const(nbs);
    g_autoptr(WeirExpr) sdepth = weir_expr_mul(nbse, ohw);
    g_autoptr(WeirExpr) w2 =
        weir_kernel_gemm_work_bytes(dt, &bl, kk, sdepth, mg);
    gwork = unit ? weir_expr_max(w1, w2) : weir_expr_ref(w2);
    g_autoptr(WeirExpr) crows =
        nbs > 1 ? weir_expr_add(kk, mg) : weir_expr_ref(kk);
    g_autoptr(WeirExpr) col = weir_expr_mul(crows, sdepth);
    g_autoptr(WeirExpr) elems0 =
        unit ? weir_expr_max(flip, col) : weir_expr_ref(col);
    /* strides above 1 without dilation: the phases' sub-filters (at most
     * cg x mg*kh*kw) and a chunk's product, cg x nbs*ceil(h/sh)*ceil(w/sw),
     * and their GEMM (depth up to mg*kh*kw) */
    g_autoptr(WeirExpr) elems = NULL;
    gint64 khc = 0, kwc = 0;
    if (!unit && d[0] == 1 && d[1] == 1 &&
        !(dim_const(wc, 2, &khc) && dim_const(wc, 3, &kwc) && khc * kwc == 1)) {
      g_autoptr(WeirExpr) sh1 = weir_expr_add_const(dim(xc, 2), st[0] - 1);
      g_autoptr(WeirExpr) sw1 = weir_expr_add_const(dim(xc, 3), st[1] - 1);
      g_autoptr(WeirExpr) she = weir_expr_const(st[0]);
      g_autoptr(WeirExpr) swe = weir_expr_const(st[1]);
      g_autoptr(WeirExpr) hq = weir_expr_floordiv(sh1, she);
      g_autoptr(WeirExpr) wq = weir_expr_floordiv(sw1, swe);
      g_autoptr(WeirExpr) pl = weir_expr_mul(hq, wq);
      g_autoptr(WeirExpr) pdepth = weir_expr_mul(nbse, pl);
      g_autoptr(WeirExpr) w3 =
          weir_kernel_gemm_work_bytes(dt, &bl, cg, pdepth, fk);
      g_autoptr(WeirExpr) gw2 = weir_expr_max(gwork, w3);
      g_autoptr(WeirExpr) pf = weir_expr_mul(cg, fk);
      g_autoptr(WeirExpr) po = weir_expr_mul(cg, pdepth);
      g_autoptr(WeirExpr) pe = weir_expr_add(pf, po);
      elems = weir_expr_max(elems0, pe);
      weir_expr_unref(gwork);
      gwork = g_steal_pointer(&gw2);
    } else {
      elems = weir_expr_ref(elems0);
    }
    rest = weir_expr_mul(elems, four);
  } else {
    gint64 ohw_v = 0, n_v = 0;
    if (weir_expr_is_const(ohw, &ohw_v) &&
        weir_expr_is_const(dim(xc, 0), &n_v) && ohw_v > 0) {
      nb = (WEIR_CONV_GRAD_DEPTH + ohw_v - 1) / ohw_v;
      nb = CLAMP(nb, 1, MAX(n_v, 1));
      /* one image's patches and dY rows, in bytes */
      gint64 kk_v = 0, mg_v = 0;
      if (weir_expr_is_const(kk, &kk_v) && weir_expr_is_const(mg, &mg_v)) {
        const gint64 per = (kk_v + mg_v) * ohw_v * esz;
        if (per > 0 && nb > 1 && nb * per > WEIR_CONV_GRAD_COL_BYTES)
          nb = MAX(WEIR_CONV_GRAD_COL_BYTES / per, 1);
      }
    }
    g_autoptr(WeirExpr) nbe = weir_expr_const(nb);
    g_autoptr(WeirExpr) depth = weir_expr_mul(nbe, ohw);
    gwork = weir_kernel_gemm_work_bytes(dt, &bl, mg, kk, depth);
    g_autoptr(WeirExpr) rows = weir_expr_add(kk, mg);
    g_autoptr(WeirExpr) elems = weir_expr_mul(rows, depth);
    rest = weir_expr_mul(elems, four);
  }
  g_autoptr(WeirExpr) gw = round64(weir_expr_ref(gwork));
  g_autofree char *gw_c = e->expr_c(e, gw);
  g_autofree char *ws = weir_kernel_scratch_arg(e, weir_expr_add(gw, rest));
  /* the helpers' suffix is their GEMM's (a node's own blocking gets its
   * own copy) */
  g_autofree char *helper = g_strdup_printf("weir_wconv2d_grad_%s", bl.id);
  GString *t = g_string_new(grad_input);
  g_string_replace(t, "@T@", ctype, 0);
  g_string_replace(t, "@S@", bl.id, 0);
  e->helper(e, helper, t->str);
  g_string_free(t, TRUE);
  emit_header(e, kind == 'f' ? "weir (im2col, GEMM over image chunks)"
                             : (st[0] == 1 && st[1] == 1
                                    ? "weir (implicit col2im: a convolution "
                                      "of dY)"
                                    : "weir (GEMM, col2im)"));
  g_autofree char *gslot_c = gslot ? e->expr_c(e, gslot) : g_strdup("0");
  g_autofree char *nbarg =
      kind == 'i' ? g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                                    ", (int64_t)(%s), %" G_GINT64_FORMAT ", ",
                                    nb, nbs, gslot_c, gslots)
                  : g_strdup_printf("%" G_GINT64_FORMAT ", ", nb);
  g_string_append_printf(
      e->code,
      "%s |= weir_wconv2d_grad_%s_%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
      "%s, %s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %s(int64_t)(%s), %s);\n",
      e->status, op, bl.id, e->in[0].ptr, e->in[1].ptr, e->out[0].ptr, n, c, h,
      w, m, kh, kw, oh, ow, group, st[0], st[1], d[0], d[1], p[0], p[1], nbarg,
      gw_c, ws);
  return TRUE;
}

static gboolean grad_filter_emit(WeirNativeEmit *e, GError **error) {
  return grad_emit(e, 'f', error);
}

static gboolean grad_input_emit(WeirNativeEmit *e, GError **error) {
  return grad_emit(e, 'i', error);
}

static const WeirNativeImpl grad_impls[] = {
    {.op = "ConvGradFilter",
     .impl = "weir",
     .accepts = grad_filter_accepts,
     .emit = grad_filter_emit},
    {.op = "ConvGradInput",
     .impl = "weir",
     .accepts = grad_input_accepts,
     .emit = grad_input_emit},
};

void weir_native_register_conv_grad(void) {
  for (guint i = 0; i < G_N_ELEMENTS(grad_impls); i++)
    weir_native_register(&grad_impls[i]);
}
