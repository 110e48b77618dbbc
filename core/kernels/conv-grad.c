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
 *    col2im, no zeroing.  Maps smaller than WEIR_CONV_GRAD_DEPTH pixels
 *    with at least as many input channels (per group) as pixels (the
 *    last stages of a CIFAR ResNet: 128 channels of 8x8, 256 of 4x4)
 *    take chunks of images instead: their patches side by side in a column
 * buffer, one GEMM per group and chunk (the flipped filter packed once per
 * chunk, not once per image), each image's rows then copied into dX.  At other
 *    strides (or pads beyond the kernel's reach): one GEMM per group and
 *    chunk of images into a column buffer, then col2im (threads split the
 *    (image, channel) pairs); the chunk's rows of dY are copied side by
 *    side so that the GEMM has at least WEIR_CONV_GRAD_DEPTH columns (the
 *    stride-2 layers of a CIFAR ResNet have 16 to 256 output pixels).
 *  - Filter gradient, depthwise: weir_dwconv2d_grad_filter_<dtype>, one
 *    channel per thread at a time, the images summed in order.  Otherwise
 *    one GEMM per group and chunk of images, dW_g += dY_g * cols^T, with
 *    the chunk's patches side by side in a column buffer (im2col) and, for
 *    chunks of more than one image, dY_g's rows copied beside each other,
 *    so that the GEMM's depth (images x output pixels) is at least
 *    WEIR_CONV_GRAD_DEPTH even for small feature maps.
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
    " * dilation * (k - 1) - pad, gathered by the GEMM's packing.  Other\n"
    " * strides: per group and chunk of nbs images, col[kk x nbs*oh*ow] =\n"
    " * w_g^T * dy_g (the chunk's rows of dy_g side by side), then col2im\n"
    " * into dx_g (zeroed first; threads split the (image, channel) pairs).\n"
    " * ws: the GEMM's packing buffers (gw bytes), then wf or col (and the\n"
    " * chunk's rows of dy). */\n"
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
    "                                       int64_t nbs, int64_t gw,\n"
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
    "      /* the flip is cg x mg x kh x kw elements read with a stride:\n"
    "       * split over the threads (a serial copy of a 256x256x3x3 filter\n"
    "       * is a serial part of every such step) */\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (cg * fk > 16384)\n"
    "#endif\n"
    "      for (int64_t ic = 0; ic < cg; ic++)\n"
    "        for (int64_t oc = 0; oc < mg; oc++)\n"
    "          for (int64_t t = 0; t < khw; t++)\n"
    "            buf[ic * fk + oc * khw + t] =\n"
    "                wg[(oc * cg + ic) * khw + khw - 1 - t];\n"
    "      if (nb > 1) {\n"
    "        /* small maps: nb images per GEMM, their patches side by side in\n"
    "         * col[fk x nb*hw] (zeros outside dy), o[cg x nb*hw] = wf * col,\n"
    "         * then each image's rows copied into dx (one GEMM of nb*hw\n"
    "         * columns instead of nb GEMMs of hw columns that would each "
    "pack\n"
    "         * the whole flipped filter again) */\n"
    "        @T@ *col = buf + cg * fk, *o = col + fk * nb * hw;\n"
    "        const int64_t P = dh * (kh - 1) - ph, Q = dw * (kw - 1) - pw;\n"
    "        for (int64_t i0 = 0; i0 < n; i0 += nb) {\n"
    "          const int64_t cnt = n - i0 < nb ? n - i0 : nb, ld = cnt * hw;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (fk * ld > 16384)\n"
    "#endif\n"
    "          for (int64_t r = 0; r < fk * cnt; r++) {\n"
    "            const int64_t rr = r / cnt, ii = r % cnt;\n"
    "            const int64_t oc = rr / khw, i = rr / kw % kh, j = rr % kw;\n"
    "            const @T@ *src = dy + ((i0 + ii) * m + g * mg + oc) * ohw;\n"
    "            @T@ *d = col + rr * ld + ii * hw;\n"
    "            const int64_t off = j * dw - Q;\n"
    "            const int64_t qlo = off >= 0 ? 0 : -off;\n"
    "            int64_t qhi = ow - off > 0 ? ow - off : 0;\n"
    "            if (qhi > wd)\n"
    "              qhi = wd;\n"
    "            for (int64_t y = 0; y < h; y++) {\n"
    "              const int64_t sy = y + i * dh - P;\n"
    "              @T@ *dr = d + y * wd;\n"
    "              if (sy < 0 || sy >= oh || qlo >= qhi) {\n"
    "                for (int64_t x = 0; x < wd; x++)\n"
    "                  dr[x] = (@T@)0;\n"
    "                continue;\n"
    "              }\n"
    "              const @T@ *sr = src + sy * ow + off;\n"
    "              for (int64_t x = 0; x < qlo; x++)\n"
    "                dr[x] = (@T@)0;\n"
    "              for (int64_t x = qlo; x < qhi; x++)\n"
    "                dr[x] = sr[x];\n"
    "              for (int64_t x = qhi; x < wd; x++)\n"
    "                dr[x] = (@T@)0;\n"
    "            }\n"
    "          }\n"
    "          st |= weir_gemm_run_@S@(0, 0, cg, ld, fk, (@T@)1, buf, fk, col, "
    "ld,\n"
    "                                  NULL, (@T@)0, o, ld, NULL, ws);\n"
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
  g_autofree char *l = g_strdup(e->n->label ? e->n->label : "");
  for (char *p = l; *p; p++)
    if (*p == '*' || *p == '/' || (guchar)*p < 0x20 || (guchar)*p >= 0x7f)
      *p = '_';
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
  g_autoptr(WeirExpr) groups = weir_expr_const(group);
  g_autoptr(WeirExpr) khw = weir_expr_mul(dim(wc, 2), dim(wc, 3));
  g_autoptr(WeirExpr) kk = weir_expr_mul(dim(wc, 1), khw); /* C/g*kh*kw */
  g_autoptr(WeirExpr) mg = weir_expr_floordiv(dim(wc, 0), groups);
  g_autoptr(WeirExpr) cg = weir_expr_floordiv(dim(xc, 1), groups);
  g_autoptr(WeirExpr) ohw = weir_expr_mul(dim(dy, 2), dim(dy, 3));
  g_autoptr(WeirExpr) hw = weir_expr_mul(dim(xc, 2), dim(xc, 3));
  g_autoptr(WeirExpr) four = weir_expr_const(dt == WEIR_DTYPE_F64 ? 8 : 4);
  g_autoptr(WeirExpr) gwork = NULL, rest = NULL;
  gint64 nb = 1, nbs = 1;
  if (kind == 'i') {
    /* unit stride: m = cg, n = h*w, k = mg*kh*kw and the flipped filter;
     * else m = kk, n = oh*ow, k = mg and the column buffer */
    gboolean unit = st[0] == 1 && st[1] == 1;
    /* unit stride on maps smaller than WEIR_CONV_GRAD_DEPTH with at
     * least as many input channels per group as pixels (packing the
     * flipped filter, cg x fk, once per image then costs more than
     * writing the image's patches, fk x hw): nb images per GEMM, with
     * their patches (fk x nb*hw) and the product (cg x nb*hw) after the
     * flipped filter */
    gint64 hw_v = 0, n_v = 0, cg_v = 0;
    if (unit && weir_expr_is_const(hw, &hw_v) &&
        weir_expr_is_const(dim(xc, 0), &n_v) && weir_expr_is_const(cg, &cg_v) &&
        hw_v > 0 && cg_v >= hw_v) {
      nb = (WEIR_CONV_GRAD_DEPTH + hw_v - 1) / hw_v;
      nb = CLAMP(nb, 1, MAX(n_v, 1));
    }
    g_autoptr(WeirExpr) nbe = weir_expr_const(nb);
    g_autoptr(WeirExpr) depth = weir_expr_mul(nbe, hw);
    g_autoptr(WeirExpr) fk = weir_expr_mul(mg, khw);
    g_autoptr(WeirExpr) w1 =
        weir_kernel_gemm_work_bytes(dt, &bl, cg, depth, fk);
    g_autoptr(WeirExpr) flip0 = weir_expr_mul(cg, fk);
    g_autoptr(WeirExpr) flip = NULL;
    if (nb > 1) {
      g_autoptr(WeirExpr) rows = weir_expr_add(fk, cg);
      g_autoptr(WeirExpr) cols = weir_expr_mul(rows, depth);
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
    g_autoptr(WeirExpr) elems =
        unit ? weir_expr_max(flip, col) : weir_expr_ref(col);
    rest = weir_expr_mul(elems, four);
  } else {
    gint64 ohw_v = 0, n_v = 0;
    if (weir_expr_is_const(ohw, &ohw_v) &&
        weir_expr_is_const(dim(xc, 0), &n_v) && ohw_v > 0) {
      nb = (WEIR_CONV_GRAD_DEPTH + ohw_v - 1) / ohw_v;
      nb = CLAMP(nb, 1, MAX(n_v, 1));
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
  g_autofree char *nbarg =
      kind == 'i' ? g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                                    ", ",
                                    nb, nbs)
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
