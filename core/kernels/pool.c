/* pool.c — Weir's MaxPool and GlobalAveragePool kernels (implementation
 * "weir" of both, docs/native.md): the helpers weir_maxpool2d_f32 (and
 * weir_maxpool2d_u8 / _i8 for quantized tensors) and weir_gap_f32 as C text
 * and their registration.  The pure expansion is an init
 * map and a max map with a bounds test per tap (a scalar loop: 2.6 ms for
 * ResNet's stem pooling, 64 x 112 x 112 -> 56 x 56, at one thread); the f32
 * kernel takes, per output row, the largest of the window's input rows
 * column by column into a row padded with -inf, then the taps of each
 * output column over that row: plain loops the compiler vectorizes.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"

static const char maxpool_text[] =
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "/* Weir's MaxPool (docs/native.md, implementation \"weir\"): y[pl][p][q] "
    "=\n"
    " * the largest x[pl][p * sh + i * dh - ph][q * sw + j * dw - pw] over "
    "the\n"
    " * kh x kw window, taps outside the image ignored (-inf), a NaN anywhere\n"
    " * in the window giving NaN (as the pure expansion's max).  The threads\n"
    " * split the (image, output row) pairs; per output row, the largest\n"
    " * of the window's input rows column by column into a row padded with\n"
    " * -inf, then every kernel column is a plain (vectorizable) loop over "
    "the\n"
    " * output columns, stride 1 with the stride constant, stride 2 over the\n"
    " * row dealt into its even and odd columns first (the order of\n"
    " * the comparisons differs from the pure expansion's only in which zero,\n"
    " * +0 or -0, a window of equal zeros gives).  Rows wider than the buffer\n"
    " * take a scalar loop nest with bounds tests. */\n"
    "#define WEIR_MAXPOOL_ROW 4096\n"
    "static inline float weir_maxpool_take_f32(float acc, float v) {\n"
    "  return v > acc || v != v ? v : acc;\n"
    "}\n"
    "/* 3 taps at stride 2 (ResNet's 3x3 s2 pooling) on vectors of 16 lanes\n"
    " * (GCC's generic vectors: AVX-512 registers where the target has them,\n"
    " * pairs or quads of narrower ones elsewhere); take as the scalar one,\n"
    " * with a bit mask for the selection */\n"
    "typedef float weir_mp_v16 __attribute__((vector_size(64)));\n"
    "typedef int32_t weir_mp_i16 __attribute__((vector_size(64)));\n"
    "/* (through pointers: a 64-byte vector passed or returned by value makes\n"
    " * GCC warn of the ABI when the target has no AVX-512, -Wpsabi) */\n"
    "static inline void weir_mp_ld(weir_mp_v16 *v, const float *p) {\n"
    "  memcpy(v, p, sizeof *v);\n"
    "}\n"
    "static inline void weir_mp_take(weir_mp_v16 *acc, const weir_mp_v16 *v) "
    "{\n"
    "  const weir_mp_i16 m = (*v > *acc) | (*v != *v);\n"
    "  *acc = (weir_mp_v16)(((weir_mp_i16)*v & m) | ((weir_mp_i16)*acc & "
    "~m));\n"
    "}\n"
    "/* The padded row of an output row from its nr (<= 8) input rows xr[]:\n"
    " * row[t] = the largest of xr[.][t - pw] for t in [lo, hi) (in the rows'\n"
    " * order, the first taken as it is: the scalar loops' result from -inf),\n"
    " * -inf elsewhere up to rl; one pass of vectors, one store each. */\n"
    "static void weir_maxpool_vert_f32(float *row, const float *const *xr, int "
    "nr,\n"
    "                                  int64_t lo, int64_t hi, int64_t pw,\n"
    "                                  int64_t rl) {\n"
    "  if (nr == 0)\n"
    "    lo = hi = 0;\n"
    "  for (int64_t t = 0; t < lo; t++)\n"
    "    row[t] = -INFINITY;\n"
    "  int64_t t = lo;\n"
    "  for (; t + 16 <= hi; t += 16) {\n"
    "    weir_mp_v16 m, v;\n"
    "    weir_mp_ld(&m, xr[0] + t - pw);\n"
    "    for (int r = 1; r < nr; r++) {\n"
    "      weir_mp_ld(&v, xr[r] + t - pw);\n"
    "      weir_mp_take(&m, &v);\n"
    "    }\n"
    "    memcpy(row + t, &m, sizeof m);\n"
    "  }\n"
    "  for (; t < hi; t++) {\n"
    "    float m = xr[0][t - pw];\n"
    "    for (int r = 1; r < nr; r++)\n"
    "      m = weir_maxpool_take_f32(m, xr[r][t - pw]);\n"
    "    row[t] = m;\n"
    "  }\n"
    "  for (t = hi > lo ? hi : lo; t < rl; t++)\n"
    "    row[t] = -INFINITY;\n"
    "}\n"
    "/* One output row of a pooling 3 columns wide at stride 2 (no dilation):\n"
    " * row the window's rows' largest per column (padded with -inf to at\n"
    " * least 2 * ow rounded up to 16, + 2 columns), acc[q] = the largest of\n"
    " * row[2q], row[2q + 1], row[2q + 2], in that order (as the generic\n"
    " * loops): the row's even and odd columns dealt by two shuffles of two\n"
    " * vectors, the even ones one column on by two more of two vectors one\n"
    " * column on. */\n"
    "static void weir_maxpool_s2k3_f32(const float *row, float *acc,\n"
    "                                  int64_t ow) {\n"
    "  for (int64_t q = 0; q < ow; q += 16) {\n"
    "    const float *r = row + 2 * q;\n"
    "    weir_mp_v16 a0, a1, b0, b1;\n"
    "    weir_mp_ld(&a0, r);\n"
    "    weir_mp_ld(&a1, r + 16);\n"
    "    weir_mp_ld(&b0, r + 2);\n"
    "    weir_mp_ld(&b1, r + 18);\n"
    "    const weir_mp_v16 ev = __builtin_shufflevector(\n"
    "        a0, a1, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, "
    "30);\n"
    "    const weir_mp_v16 od = __builtin_shufflevector(\n"
    "        a0, a1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, "
    "31);\n"
    "    const weir_mp_v16 e1 = __builtin_shufflevector(\n"
    "        b0, b1, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, "
    "30);\n"
    "    weir_mp_v16 m = ev;\n"
    "    weir_mp_take(&m, &od);\n"
    "    weir_mp_take(&m, &e1);\n"
    "    if (q + 16 <= ow)\n"
    "      memcpy(acc + q, &m, sizeof m);\n"
    "    else\n"
    "      for (int64_t l = 0; l < ow - q; l++)\n"
    "        acc[q + l] = m[l];\n"
    "  }\n"
    "}\n"
    "/* ch: the channels per image (planes / ch images) */\n"
    "static void weir_maxpool2d_f32(const float *x, float *y, int64_t planes,\n"
    "                               int64_t h, int64_t wd, int64_t oh, int64_t "
    "ow,\n"
    "                               int64_t kh, int64_t kw, int64_t sh, "
    "int64_t sw,\n"
    "                               int64_t dh, int64_t dw, int64_t ph,\n"
    "                               int64_t pw, int64_t ch) {\n"
    "  /* the padded row: input columns -pw .. (ow - 1) * sw + (kw - 1) * dw - "
    "pw */\n"
    "  const int64_t rw = (ow - 1) * sw + (kw - 1) * dw + 1;\n"
    "  if (rw > WEIR_MAXPOOL_ROW) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for\n"
    "#endif\n"
    "    for (int64_t pl = 0; pl < planes; pl++)\n"
    "      for (int64_t p = 0; p < oh; p++)\n"
    "        for (int64_t q = 0; q < ow; q++) {\n"
    "          float acc = -INFINITY;\n"
    "          for (int64_t i = 0; i < kh; i++) {\n"
    "            const int64_t ih = p * sh + i * dh - ph;\n"
    "            if (ih < 0 || ih >= h)\n"
    "              continue;\n"
    "            for (int64_t j = 0; j < kw; j++) {\n"
    "              const int64_t iw = q * sw + j * dw - pw;\n"
    "              if (iw >= 0 && iw < wd)\n"
    "                acc = weir_maxpool_take_f32(acc, x[(pl * h + ih) * wd + "
    "iw]);\n"
    "            }\n"
    "          }\n"
    "          y[(pl * oh + p) * ow + q] = acc;\n"
    "        }\n"
    "    return;\n"
    "  }\n"
    "  /* 3 taps at stride 2 along the rows: the vector path, whose loads\n"
    "   * reach column 2 * ow rounded up to 16, + 2 of the padded row */\n"
    "  const int k3s2 = kw == 3 && sw == 2 && dw == 1 &&\n"
    "                   (ow + 15) / 16 * 32 + 2 <= WEIR_MAXPOOL_ROW;\n"
    "  const int64_t rl = k3s2 ? (ow + 15) / 16 * 32 + 2 : rw;\n"
    "  /* the threads split the (image, output row) pairs, each taking every\n"
    "   * channel of its own; so at batch 1 each thread reads the input rows\n"
    "   * the stem's thread of the same number wrote (weir_stem splits its\n"
    "   * (image, output row) pairs the same way), where split by planes\n"
    "   * half of them came from the other thread's cache (scal17).  With\n"
    "   * fewer than two pairs per thread, (plane, output row) pairs. */\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel\n"
    "#endif\n"
    "  {\n"
    "    int64_t nt = 1, tid = 0;\n"
    "#ifdef _OPENMP\n"
    "    nt = omp_get_num_threads();\n"
    "    tid = omp_get_thread_num();\n"
    "#endif\n"
    "    const int64_t chn =\n"
    "        ch > 0 && planes % ch == 0 && planes / ch * oh >= 2 * nt ? ch : "
    "1;\n"
    "    const int64_t tasks = planes / chn * oh;\n"
    "    const int64_t t0 = tasks * tid / nt, t1 = tasks * (tid + 1) / nt;\n"
    "    float row[WEIR_MAXPOOL_ROW];\n"
    "    float ev[WEIR_MAXPOOL_ROW / 2], od[WEIR_MAXPOOL_ROW / 2];\n"
    "    for (int64_t tk = t0; tk < t1;) {\n"
    "      /* image im's output rows [pa, pe) */\n"
    "      const int64_t im = tk / oh, pa = tk % oh;\n"
    "      const int64_t pe = t1 - im * oh < oh ? t1 - im * oh : oh;\n"
    "      tk = im * oh + pe;\n"
    "      for (int64_t pl = im * chn; pl < (im + 1) * chn; pl++) {\n"
    "        const float *xp = x + pl * h * wd;\n"
    "        for (int64_t p = pa; p < pe; p++) {\n"
    "          float *acc = y + (pl * oh + p) * ow;\n"
    "          /* the window's kh rows first, the largest per input column\n"
    "           * (contiguous passes; the padding columns stay -inf), then "
    "the\n"
    "           * kw taps of each output column over that one row: kh * rw +\n"
    "           * kw * ow steps where tap by tap took kh * (rw + kw * ow) */\n"
    "          const int64_t lo = pw < rw ? pw : rw;\n"
    "          const int64_t hi = wd + pw < rw ? wd + pw : rw;\n"
    "          if (k3s2 && kh <= 8) {\n"
    "            /* the vector path: the window's rows in one pass, then the\n"
    "             * three taps */\n"
    "            const float *xr[8];\n"
    "            int nr = 0;\n"
    "            for (int64_t i = 0; i < kh; i++) {\n"
    "              const int64_t ih = p * sh + i * dh - ph;\n"
    "              if (ih >= 0 && ih < h)\n"
    "                xr[nr++] = xp + ih * wd;\n"
    "            }\n"
    "            /* the new input rows of the output row two rows on, "
    "prefetched\n"
    "             * (out of the caches in a network) */\n"
    "            const int64_t pr = (p + 2) * sh + (kh - 1) * dh - ph;\n"
    "            if (pr >= 0 && pr + sh <= h)\n"
    "              for (int64_t t = 0; t < sh * wd; t += 16)\n"
    "                __builtin_prefetch(xp + pr * wd + t, 0, 3);\n"
    "            weir_maxpool_vert_f32(row, xr, nr, lo, hi, pw, rl);\n"
    "            weir_maxpool_s2k3_f32(row, acc, ow);\n"
    "            continue;\n"
    "          }\n"
    "          for (int64_t t = 0; t < rl; t++)\n"
    "            row[t] = -INFINITY;\n"
    "          for (int64_t i = 0; i < kh; i++) {\n"
    "            const int64_t ih = p * sh + i * dh - ph;\n"
    "            if (ih < 0 || ih >= h)\n"
    "              continue;\n"
    "            const float *xr = xp + ih * wd;\n"
    "            for (int64_t t = lo; t < hi; t++)\n"
    "              row[t] = weir_maxpool_take_f32(row[t], xr[t - pw]);\n"
    "          }\n"
    "          for (int64_t q = 0; q < ow; q++)\n"
    "            acc[q] = -INFINITY;\n"
    "          if (k3s2) {\n"
    "            weir_maxpool_s2k3_f32(row, acc, ow);\n"
    "            continue;\n"
    "          }\n"
    "          if (sw == 2) {\n"
    "            /* the row dealt into its even and odd columns (a copy at a\n"
    "             * constant stride), so that each tap is a contiguous loop "
    "*/\n"
    "            for (int64_t t = 0; t < (rw + 1) / 2; t++)\n"
    "              ev[t] = row[2 * t];\n"
    "            for (int64_t t = 0; t < rw / 2; t++)\n"
    "              od[t] = row[2 * t + 1];\n"
    "            for (int64_t j = 0; j < kw; j++) {\n"
    "              const int64_t c = j * dw;\n"
    "              const float *r = c % 2 ? od + c / 2 : ev + c / 2;\n"
    "              for (int64_t q = 0; q < ow; q++)\n"
    "                acc[q] = weir_maxpool_take_f32(acc[q], r[q]);\n"
    "            }\n"
    "            continue;\n"
    "          }\n"
    "          for (int64_t j = 0; j < kw; j++) {\n"
    "            const float *r = row + j * dw;\n"
    "            if (sw == 1)\n"
    "              for (int64_t q = 0; q < ow; q++)\n"
    "                acc[q] = weir_maxpool_take_f32(acc[q], r[q]);\n"
    "            else\n"
    "              for (int64_t q = 0; q < ow; q++)\n"
    "                acc[q] = weir_maxpool_take_f32(acc[q], r[q * sw]);\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* The same kernel on an integer type: @T@ (C type), @S@ (name suffix),
 * @LOW@ (the type's lowest value), filled in by maxpool_int_text. */
static const char maxpool_int_template[] =
    "/* Weir's MaxPool on @S@ (docs/native.md, implementation \"weir\"): as\n"
    " * weir_maxpool2d_f32 on @T@, taps outside the image ignored (taken as\n"
    " * @LOW@, the type's lowest value, as the pure expansion's initial "
    "value).\n"
    " * Max-pooling commutes with a monotone quantization, so on a quantized\n"
    " * tensor it gives exactly the quantized f32 result. */\n"
    "#ifndef WEIR_MAXPOOL_ROW\n"
    "#define WEIR_MAXPOOL_ROW 4096\n"
    "#endif\n"
    "static void weir_maxpool2d_@S@(const @T@ *x, @T@ *y, int64_t planes,\n"
    "                              int64_t h, int64_t wd, int64_t oh, int64_t "
    "ow,\n"
    "                              int64_t kh, int64_t kw, int64_t sh, "
    "int64_t sw,\n"
    "                              int64_t dh, int64_t dw, int64_t ph,\n"
    "                              int64_t pw) {\n"
    "  /* 2 x 2, stride 2, no padding, no dilation (the common pooling of\n"
    "   * CNNs): every window inside the image, one pass per output row\n"
    "   * reading its two input rows, without the padded row (whose copies\n"
    "   * dominate on small planes such as 8 x 8) */\n"
    "  if (kh == 2 && kw == 2 && sh == 2 && sw == 2 && dh == 1 && dw == 1 &&\n"
    "      ph == 0 && pw == 0 && 2 * oh <= h && 2 * ow <= wd) {\n"
    "    const int64_t rows = planes * oh;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for if (rows * ow > 16384)\n"
    "#endif\n"
    "    for (int64_t r = 0; r < rows; r++) {\n"
    "      const int64_t pl = r / oh, p = r % oh;\n"
    "      const @T@ *a = x + (pl * h + 2 * p) * wd, *b = a + wd;\n"
    "      @T@ *o = y + r * ow;\n"
    "      for (int64_t q = 0; q < ow; q++) {\n"
    "        const @T@ m0 = a[2 * q] > a[2 * q + 1] ? a[2 * q] : a[2 * q + "
    "1];\n"
    "        const @T@ m1 = b[2 * q] > b[2 * q + 1] ? b[2 * q] : b[2 * q + "
    "1];\n"
    "        o[q] = m0 > m1 ? m0 : m1;\n"
    "      }\n"
    "    }\n"
    "    return;\n"
    "  }\n"
    "  const int64_t rw = (ow - 1) * sw + (kw - 1) * dw + 1;\n"
    "  if (rw > WEIR_MAXPOOL_ROW) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for\n"
    "#endif\n"
    "    for (int64_t pl = 0; pl < planes; pl++)\n"
    "      for (int64_t p = 0; p < oh; p++)\n"
    "        for (int64_t q = 0; q < ow; q++) {\n"
    "          @T@ acc = @LOW@;\n"
    "          for (int64_t i = 0; i < kh; i++) {\n"
    "            const int64_t ih = p * sh + i * dh - ph;\n"
    "            if (ih < 0 || ih >= h)\n"
    "              continue;\n"
    "            for (int64_t j = 0; j < kw; j++) {\n"
    "              const int64_t iw = q * sw + j * dw - pw;\n"
    "              if (iw >= 0 && iw < wd) {\n"
    "                const @T@ v = x[(pl * h + ih) * wd + iw];\n"
    "                acc = v > acc ? v : acc;\n"
    "              }\n"
    "            }\n"
    "          }\n"
    "          y[(pl * oh + p) * ow + q] = acc;\n"
    "        }\n"
    "    return;\n"
    "  }\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for\n"
    "#endif\n"
    "  for (int64_t pl = 0; pl < planes; pl++) {\n"
    "    @T@ row[WEIR_MAXPOOL_ROW];\n"
    "    const @T@ *xp = x + pl * h * wd;\n"
    "    for (int64_t p = 0; p < oh; p++) {\n"
    "      @T@ *acc = y + (pl * oh + p) * ow;\n"
    "      for (int64_t q = 0; q < ow; q++)\n"
    "        acc[q] = @LOW@;\n"
    "      for (int64_t i = 0; i < kh; i++) {\n"
    "        const int64_t ih = p * sh + i * dh - ph;\n"
    "        if (ih < 0 || ih >= h)\n"
    "          continue;\n"
    "        const @T@ *xr = xp + ih * wd;\n"
    "        for (int64_t t = 0; t < rw; t++) {\n"
    "          const int64_t iw = t - pw;\n"
    "          row[t] = iw >= 0 && iw < wd ? xr[iw] : @LOW@;\n"
    "        }\n"
    "        for (int64_t j = 0; j < kw; j++) {\n"
    "          const @T@ *r = row + j * dw;\n"
    "          if (sw == 1)\n"
    "            for (int64_t q = 0; q < ow; q++)\n"
    "              acc[q] = r[q] > acc[q] ? r[q] : acc[q];\n"
    "          else if (sw == 2)\n"
    "            for (int64_t q = 0; q < ow; q++)\n"
    "              acc[q] = r[2 * q] > acc[q] ? r[2 * q] : acc[q];\n"
    "          else\n"
    "            for (int64_t q = 0; q < ow; q++)\n"
    "              acc[q] = r[q * sw] > acc[q] ? r[q * sw] : acc[q];\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* The integer kernel's text for t (u8 or i8). (transfer full) */
static char *maxpool_int_text(WeirDType t) {
  gboolean u = t == WEIR_DTYPE_U8;
  GString *s = g_string_new(maxpool_int_template);
  g_string_replace(s, "@T@", u ? "uint8_t" : "int8_t", 0);
  g_string_replace(s, "@S@", weir_dtype_name(t), 0);
  g_string_replace(s, "@LOW@", u ? "0" : "(-128)", 0);
  return g_string_free(s, FALSE);
}

static const char gap_text[] =
    "/* Weir's GlobalAveragePool (docs/native.md, implementation \"weir\"):\n"
    " * y[pl] = the sum of the hw elements of plane pl / hw.  The planes are\n"
    " * split over the threads (batch 1 included: one plane per channel);\n"
    " * each plane is summed into 32 partial sums (lane l adds the\n"
    " * elements l, l + 32, l + 64, ...: vectorizable, where the pure\n"
    " * expansion's single accumulator waits on every add), then added\n"
    " * pairwise (16 apart, 8, 4, 2, 1).  The partial sums are four vectors\n"
    " * of 8 lanes held in registers (as an array in memory, a plane's last\n"
    " * partial block added lane by lane made every vector add wait on\n"
    " * stores: 29 us for 1280 x 7 x 7); the last partial block is read as\n"
    " * whole vectors with the lanes past the plane zeroed (the next planes'\n"
    " * elements; where those vectors would end past the tensor, the tail\n"
    " * is copied into a zeroed buffer instead), which leaves every sum\n"
    " * exactly as lane-by-lane adds would. */\n"
    "typedef float weir_gap_v8 __attribute__((vector_size(32)));\n"
    "typedef int32_t weir_gap_i8 __attribute__((vector_size(32)));\n"
    "static inline weir_gap_v8 weir_gap_ld(const float *p) {\n"
    "  weir_gap_v8 v;\n"
    "  memcpy(&v, p, sizeof v);\n"
    "  return v;\n"
    "}\n"
    "static weir_gap_v8 weir_gap_tail(const float *q, int64_t k,\n"
    "                                 weir_gap_i8 r) {\n"
    "  const weir_gap_i8 lane = {0, 1, 2, 3, 4, 5, 6, 7};\n"
    "  return (weir_gap_v8)((weir_gap_i8)weir_gap_ld(q + k) &\n"
    "                       (lane + (int32_t)k < r));\n"
    "}\n"
    "static void weir_gap_f32(const float *x, float *y, int64_t planes,\n"
    "                         int64_t hw) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (planes * hw > 16384)\n"
    "#endif\n"
    "  for (int64_t pl = 0; pl < planes; pl++) {\n"
    "    const float *p = x + pl * hw;\n"
    "    weir_gap_v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};\n"
    "    int64_t i = 0;\n"
    "    for (; i + 32 <= hw; i += 32) {\n"
    "      a0 += weir_gap_ld(p + i);\n"
    "      a1 += weir_gap_ld(p + i + 8);\n"
    "      a2 += weir_gap_ld(p + i + 16);\n"
    "      a3 += weir_gap_ld(p + i + 24);\n"
    "    }\n"
    "    const int64_t rem = hw - i;\n"
    "    if (rem > 0) {\n"
    "      float t[32] = {0};\n"
    "      const float *q = p + i;\n"
    "      /* the vectors holding the tail, when they end inside the\n"
    "       * tensor (else copied) */\n"
    "      if ((pl * hw + i + (rem + 7) / 8 * 8) > planes * hw) {\n"
    "        memcpy(t, q, (size_t)rem * sizeof(float));\n"
    "        q = t;\n"
    "      }\n"
    "      const weir_gap_i8 r = (weir_gap_i8){0} + (int32_t)rem;\n"
    "      a0 += weir_gap_tail(q, 0, r);\n"
    "      if (rem > 8)\n"
    "        a1 += weir_gap_tail(q, 8, r);\n"
    "      if (rem > 16)\n"
    "        a2 += weir_gap_tail(q, 16, r);\n"
    "      if (rem > 24)\n"
    "        a3 += weir_gap_tail(q, 24, r);\n"
    "    }\n"
    "    a0 += a2;\n"
    "    a1 += a3;\n"
    "    a0 += a1;\n"
    "    float acc[8];\n"
    "    memcpy(acc, &a0, sizeof acc);\n"
    "    for (int w = 4; w >= 1; w /= 2)\n"
    "      for (int l = 0; l < w; l++)\n"
    "        acc[l] += acc[l + w];\n"
    "    y[pl] = acc[0] / (float)hw;\n"
    "  }\n"
    "}\n";

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

/* The node's INTS attribute name: its first n values into v (def when
 * absent); FALSE when it has another number of values. */
static gboolean ints_attr(const WeirNode *n, const char *name, guint len,
                          gint64 def, gint64 *v) {
  const GArray *a = weir_node_attr_ints(n, name);
  for (guint i = 0; i < len; i++)
    v[i] = def;
  if (!a)
    return TRUE;
  if (a->len != len)
    return FALSE;
  for (guint i = 0; i < len; i++)
    v[i] = g_array_index(a, gint64, i);
  return TRUE;
}

typedef struct {
  gint64 k[2], s[2], d[2], p[4];
} PoolGeo;

static gboolean pool_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char **reason) {
  if (weir_node_has_out_conn(n, "out1")) {
    *reason = g_strdup("the output Indices is not produced by the kernel");
    return FALSE;
  }
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (!x || !y) {
    *reason = g_strdup("an operand is missing");
    return FALSE;
  }
  const WeirContainer *c[2] = {x, y};
  for (guint i = 0; i < 2; i++) {
    if ((c[i]->dtype != WEIR_DTYPE_F32 && c[i]->dtype != WEIR_DTYPE_U8 &&
         c[i]->dtype != WEIR_DTYPE_I8) ||
        c[i]->dtype != x->dtype || c[i]->shape->len != 4) {
      *reason = g_strdup_printf("'%s' is not a rank-4 f32, u8 or i8 tensor "
                                "of the input's type; the kernel pools two "
                                "spatial dimensions",
                                c[i]->name);
      return FALSE;
    }
    if (!weir_kernel_row_major(c[i])) {
      *reason = g_strdup_printf("'%s' is not stored row-major", c[i]->name);
      return FALSE;
    }
  }
  const WeirAttr *ap = weir_node_attr(n, "auto_pad");
  if (ap && ap->type == WEIR_ATTR_STRING && strcmp(ap->s, "NOTSET") != 0 &&
      strcmp(ap->s, "VALID") != 0) {
    *reason =
        g_strdup_printf("auto_pad %s is left to the pure expansion", ap->s);
    return FALSE;
  }
  PoolGeo geo;
  if (!ints_attr(n, "kernel_shape", 2, 0, geo.k) ||
      !ints_attr(n, "strides", 2, 1, geo.s) ||
      !ints_attr(n, "dilations", 2, 1, geo.d) ||
      !ints_attr(n, "pads", 4, 0, geo.p) || geo.k[0] < 1 || geo.k[1] < 1 ||
      geo.s[0] < 1 || geo.s[1] < 1 || geo.d[0] < 1 || geo.d[1] < 1 ||
      geo.p[0] < 0 || geo.p[1] < 0) {
    *reason = g_strdup("kernel_shape, strides, dilations and pads must be "
                       "given for two spatial dimensions, positive");
    return FALSE;
  }
  return TRUE;
}

static gboolean pool_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!pool_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  const WeirContainer *x = e->in[0].c, *y = e->out[0].c;
  PoolGeo geo;
  ints_attr(e->n, "kernel_shape", 2, 0, geo.k);
  ints_attr(e->n, "strides", 2, 1, geo.s);
  ints_attr(e->n, "dilations", 2, 1, geo.d);
  ints_attr(e->n, "pads", 4, 0, geo.p);
  g_autofree char *fn =
      g_strdup_printf("weir_maxpool2d_%s", weir_dtype_name(x->dtype));
  if (x->dtype == WEIR_DTYPE_F32) {
    e->helper(e, fn, maxpool_text);
  } else {
    g_autofree char *text = maxpool_int_text(x->dtype);
    e->helper(e, fn, text);
  }
  g_autoptr(WeirExpr) planes = weir_expr_mul(dim(x, 0), dim(x, 1));
  g_autofree char *pl = e->expr_c(e, planes), *h = e->expr_c(e, dim(x, 2)),
                  *wd = e->expr_c(e, dim(x, 3)), *oh = e->expr_c(e, dim(y, 2)),
                  *ow = e->expr_c(e, dim(y, 3));
  /* f32: and the channels per image (its threads split images and rows) */
  g_autofree char *ch =
      x->dtype == WEIR_DTYPE_F32 ? e->expr_c(e, dim(x, 1)) : NULL;
  g_autofree char *l = weir_kernel_comment_label(e->n);
  g_string_append_printf(e->code, "/* %s '%s' (node %u): weir */\n", e->n->op,
                         l, e->n->id);
  g_string_append_printf(
      e->code,
      "%s(%s, %s, %s, %s, %s, %s, %s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      "%s%s);\n",
      fn, e->in[0].ptr, e->out[0].ptr, pl, h, wd, oh, ow, geo.k[0], geo.k[1],
      geo.s[0], geo.s[1], geo.d[0], geo.d[1], geo.p[0], geo.p[1],
      ch ? ", " : "", ch ? ch : "");
  return TRUE;
}

/* GlobalAveragePool: f32, rank >= 3, both tensors row-major. */
static gboolean gap_accepts(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n, char **reason) {
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (!x || !y) {
    *reason = g_strdup("an operand is missing");
    return FALSE;
  }
  const WeirContainer *c[2] = {x, y};
  for (guint i = 0; i < 2; i++) {
    if (c[i]->dtype != WEIR_DTYPE_F32 || c[i]->shape->len < 3 ||
        c[i]->shape->len != x->shape->len) {
      *reason = g_strdup_printf("'%s' is not an f32 tensor of rank 3 or more "
                                "(N, C, spatial dimensions)",
                                c[i]->name);
      return FALSE;
    }
    if (!weir_kernel_row_major(c[i])) {
      *reason = g_strdup_printf("'%s' is not stored row-major", c[i]->name);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean gap_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!gap_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  const WeirContainer *x = e->in[0].c;
  e->helper(e, "weir_gap_f32", gap_text);
  g_autoptr(WeirExpr) planes = weir_expr_mul(dim(x, 0), dim(x, 1));
  g_autoptr(WeirExpr) hw = weir_expr_const(1);
  for (guint d = 2; d < x->shape->len; d++) {
    WeirExpr *next = weir_expr_mul(hw, dim(x, d));
    weir_expr_unref(hw);
    hw = next;
  }
  g_autofree char *pl = e->expr_c(e, planes), *hws = e->expr_c(e, hw);
  g_autofree char *l = weir_kernel_comment_label(e->n);
  g_string_append_printf(e->code, "/* %s '%s' (node %u): weir */\n", e->n->op,
                         l, e->n->id);
  g_string_append_printf(e->code, "weir_gap_f32(%s, %s, %s, %s);\n",
                         e->in[0].ptr, e->out[0].ptr, pl, hws);
  return TRUE;
}

static const WeirNativeImpl gap_impl = {.op = "GlobalAveragePool",
                                        .impl = "weir",
                                        .accepts = gap_accepts,
                                        .emit = gap_emit};

static const WeirNativeImpl pool_impl = {.op = "MaxPool",
                                         .impl = "weir",
                                         .accepts = pool_accepts,
                                         .emit = pool_emit};

void weir_native_register_pool(void) {
  weir_native_register(&pool_impl);
  weir_native_register(&gap_impl);
}
