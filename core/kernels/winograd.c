/* winograd.c — Weir's Winograd convolution F(4x4, 3x3), the native
 * implementation "winograd" of Conv (docs/native.md, "Weir's Winograd
 * convolution").
 *
 * Conventions of this file:
 *  - The helper is C in winograd-helper.c, a GResource
 *    (kernels.gresource.xml) pasted into the generated unit with the
 *    suffix, microtile and cache blocks of the GEMM it calls (Weir's own,
 *    core/kernels/gemm.c: weir_gemm_runp_<id>) filled in, so the
 *    compile-cache key covers them.
 *  - It applies to f32, 2-D, 3x3 kernels at stride 1 and dilation 1, one
 *    group, any padding and batch, with constant channel counts (they size
 *    the blocks and the scratch) and at least 4 output channels (fewer
 *    rows take the GEMM's unpacked path, which cannot read a packed B).
 *  - A constant filter is transformed and packed once, at load
 *    (e->prepacked: weir_wino_prepack_<id>); any other is transformed per
 *    call into the scratch block.  Scratch (wino_work_bytes): per thread
 *    the GEMM's packing buffers, then per thread V and M for one block of
 *    tiles, then U.
 *  - The node's epilogue (bias, residual, activation) is applied in the
 *    output transform, so the output is written once.
 *  - The tunable parameter "tiles" is the block of tiles (GEMM columns) done
 *    at a time; by default the most whole NR panels whose V and M fit in
 *    about 1.5 MiB, at least one panel and at most eight.
 *  - Default (weir_native_default_impl through .prefer): where measured
 *    faster than "weir" on this 2-core AVX-512 machine: both channel
 *    counts at least WINO_MIN_CHANNELS and the output map at least
 *    WINO_MIN_MAP x WINO_MIN_MAP or, for a constant filter (transformed
 *    once at load), at least WINO_MIN_TILES tiles over the batch
 *    (docs/performance.md, "Winograd", and "... (wino17)").
 *  - The same file registers "winograd" for ConvGradInput at unit stride
 *    (docs/native.md, "ConvGradInput on the Winograd convolution"): a
 *    second caller of the same helper, on dY with the flipped filter
 *    written into the scratch after the helper's own blocks; the default
 *    by the forward rule, dY being the forward output.
 */
#include <gio/gio.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"
#include "weir-ops-linalg.h"

#define HELPER_RESOURCE "/org/weir/kernels/winograd-helper.c"

/* The implementation parameter: tiles per block. */
#define WINO_PARAM_TILES "tiles"

/* The default choice (measured, docs/performance.md). */
#define WINO_MIN_CHANNELS 32
#define WINO_MIN_MAP 14
#define WINO_MIN_TILES 32

GResource *weir_kernels_get_resource(void);

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean dim_const(const WeirContainer *c, guint d, gint64 *v) {
  return weir_expr_is_const(dim(c, d), v);
}

static gboolean wino_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char **reason) {
  /* the operand checks of Weir's GEMM convolution (row-major, 2-D) */
  if (!weir_native_accepts_as("Conv", "weir", g, s, n, reason))
    return FALSE;
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *w = weir_native_port(g, s, n, TRUE, 1);
  const WeirContainer *b = weir_native_port(g, s, n, TRUE, 2);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (x->dtype != WEIR_DTYPE_F32 || w->dtype != WEIR_DTYPE_F32 ||
      y->dtype != WEIR_DTYPE_F32 || (b && b->dtype != WEIR_DTYPE_F32)) {
    *reason = g_strdup("the Winograd convolution is f32 only");
    return FALSE;
  }
  gint64 kh, kw, c, m;
  if (!dim_const(w, 2, &kh) || !dim_const(w, 3, &kw) || kh != 3 || kw != 3) {
    *reason = g_strdup("the Winograd convolution needs a 3x3 kernel");
    return FALSE;
  }
  g_auto(WeirConvGeometry) geo = {0};
  g_autoptr(GError) local = NULL;
  if (!weir_conv_geometry_compute(
          n, FALSE, 2, (WeirExpr *const *)x->shape->pdata + 2,
          (WeirExpr *const *)w->shape->pdata + 2, &geo, &local)) {
    *reason = g_strdup(local->message);
    return FALSE;
  }
  if (geo.group != 1 || geo.strides[0] != 1 || geo.strides[1] != 1 ||
      geo.dilations[0] != 1 || geo.dilations[1] != 1) {
    *reason = g_strdup("the Winograd convolution needs stride 1, dilation 1 "
                       "and one group");
    return FALSE;
  }
  if (!dim_const(w, 0, &m) || !dim_const(w, 1, &c) || c < 1 || m < 4) {
    *reason = g_strdup("the Winograd convolution needs constant channel "
                       "counts and at least 4 output channels");
    return FALSE;
  }
  return TRUE;
}

/* The shapes where the Winograd convolution was measured faster than
 * Weir's implicit GEMM: filter w [M, C, 3, 3] with both channel counts at
 * least WINO_MIN_CHANNELS, and the forward output map `map` ([N, M, oh,
 * ow]; dY for the input gradient) at least WINO_MIN_MAP on each side, or,
 * when the filter is transformed once at load (`at_load`: a constant),
 * at least WINO_MIN_TILES 4x4 tiles over the batch (the 8x8 and 4x4 maps
 * of a CIFAR ResNet at batch 32: 128 and 32 tiles; a batch-1 7x7 map has
 * 4).  A filter transformed per call (a training program's parameter, the
 * input gradient's flipped filter) costs 36 x M x C transforms in every
 * call, more than these small maps save: resnet18's training step took
 * 1.5x the CPU with them on Winograd. */
static gboolean measured_faster(const WeirContainer *w,
                                const WeirContainer *map, gboolean at_load) {
  gint64 c, m, n, oh, ow;
  if (!dim_const(w, 0, &m) || !dim_const(w, 1, &c) || !dim_const(map, 2, &oh) ||
      !dim_const(map, 3, &ow) || c < WINO_MIN_CHANNELS || m < WINO_MIN_CHANNELS)
    return FALSE;
  if (oh >= WINO_MIN_MAP && ow >= WINO_MIN_MAP)
    return TRUE;
  return at_load && dim_const(map, 0, &n) &&
         n * ((oh + 3) / 4) * ((ow + 3) / 4) >= WINO_MIN_TILES;
}

/* The default: accepted, and the shape where it was measured faster. */
static gboolean wino_prefer(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  g_autofree char *reason = NULL;
  if (!wino_accepts(g, s, n, &reason))
    return FALSE;
  const WeirContainer *w = weir_native_port(g, s, n, TRUE, 1);
  return measured_faster(w, weir_native_port(g, s, n, FALSE, 0),
                         w->initial != NULL);
}

static void emit_header(WeirNativeEmit *e, const char *what) {
  g_autofree char *l = weir_kernel_comment_label(e->n);
  g_string_append_printf(e->code, "/* %s '%s' (node %u): %s */\n", e->n->op, l,
                         e->n->id, what);
}

/* The helper's text for the GEMM of blocking bl. (transfer full) */
static char *wino_text(const WeirGemmBlocking *bl) {
  g_autoptr(GBytes) bytes =
      g_resource_lookup_data(weir_kernels_get_resource(), HELPER_RESOURCE,
                             G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
  g_return_val_if_fail(bytes != NULL, NULL);
  gsize len = 0;
  const char *data = g_bytes_get_data(bytes, &len);
  GString *s = g_string_new_len(data, (gssize)len);
  char buf[32];
  g_string_replace(s, "@S@", bl->id, 0);
  g_snprintf(buf, sizeof buf, "%u", bl->mr);
  g_string_replace(s, "@MR@", buf, 0);
  g_snprintf(buf, sizeof buf, "%u", bl->nr);
  g_string_replace(s, "@NR@", buf, 0);
  g_snprintf(buf, sizeof buf, "%u", bl->kc);
  g_string_replace(s, "@KC@", buf, 0);
  return g_string_free(s, FALSE);
}

/* Tiles per block for c input and m output channels (the default of the
 * parameter "tiles"): whole NR panels, V and M in about 1.5 MiB.  When
 * the output y has a constant number of tiles that passes that by at most
 * an eighth (a batch-1 28x28 map: 49 tiles against 48), all of them: in
 * blocks of that many the last block would hold a tile or a few and read
 * all of U again for them (2.4 MB at 128 channels), with the shared
 * blocks' three barriers at two threads (s18). */
static gint64 wino_default_tiles(const WeirGemmBlocking *bl, gint64 c, gint64 m,
                                 const WeirContainer *y) {
  gint64 per_tile = 36 * (c + m) * 4;
  gint64 panels = (3 * 512 * 1024) / (per_tile * bl->nr);
  gint64 tiles = CLAMP(panels, 1, 8) * bl->nr;
  gint64 n = 0, oh = 0, ow = 0;
  if (y && dim_const(y, 0, &n) && dim_const(y, 2, &oh) &&
      dim_const(y, 3, &ow)) {
    gint64 all = n * ((oh + 3) / 4) * ((ow + 3) / 4);
    if (all > tiles && all <= tiles + tiles / 8 && all <= (gint64)bl->nc)
      tiles = all;
  }
  return tiles;
}

/* The bytes of the helper's scratch (winograd-helper.c, weir_wino_<id>):
 * per thread one GEMM work slot (*slot bytes each), then per thread a
 * region of V (36 x c x the block of tiles rounded up to NR) and M (36 x m
 * x tiles, and one vector read past its end), each rounded up to 64 bytes,
 * then U (36 x m x c) when with_u. */
static gint64 wino_work_bytes(const WeirGemmBlocking *bl, gint64 c, gint64 m,
                              gint64 tiles, gboolean with_u, gint64 *slot) {
  g_autoptr(WeirExpr) me = weir_expr_const(m);
  g_autoptr(WeirExpr) ne = weir_expr_const(tiles);
  g_autoptr(WeirExpr) ce = weir_expr_const(c);
  g_autoptr(WeirExpr) wb =
      weir_kernel_gemm_work_bytes(WEIR_DTYPE_F32, bl, me, ne, ce);
  gint64 all = 0;
  weir_expr_is_const(wb, &all);
  guint threads = MAX(bl->threads, 1);
  *slot = all / threads;
  gint64 vrow = (tiles + bl->nr - 1) / bl->nr * bl->nr;
  gint64 vfl = (36 * c * vrow + 15) / 16 * 16;
  gint64 mfl = (36 * m * tiles + 16 + 15) / 16 * 16;
  return threads * *slot + threads * (vfl + mfl) * 4 +
         (with_u ? 36 * m * c * 4 : 0);
}

static const gint64 tiles_values[] = {48, 96, 192, 384};
static const WeirNativeParam wino_params[] = {
    {.name = WINO_PARAM_TILES,
     .doc = "tiles (GEMM columns) transformed and multiplied per block",
     .values = tiles_values,
     .n_values = G_N_ELEMENTS(tiles_values)},
};

static gboolean wino_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!wino_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  const WeirContainer *x = e->in[0].c, *w = e->in[1].c, *y = e->out[0].c;
  g_auto(WeirConvGeometry) geo = {0};
  if (!weir_conv_geometry_compute(
          e->n, FALSE, 2, (WeirExpr *const *)x->shape->pdata + 2,
          (WeirExpr *const *)w->shape->pdata + 2, &geo, error))
    return FALSE;
  gint64 c = 0, m = 0;
  dim_const(w, 1, &c);
  dim_const(w, 0, &m);
  WeirGemmBlocking bl = {0};
  if (!weir_kernel_gemm_record(e, WEIR_DTYPE_F32, &bl, error))
    return FALSE;
  gint64 tiles = weir_native_param(e->n, WINO_PARAM_TILES,
                                   wino_default_tiles(&bl, c, m, y));
  guint pmr = bl.mr;
  if (tiles < 1 || tiles > (gint64)bl.nc) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "node %u ('%s'): %s=%" G_GINT64_FORMAT
                " is not a block of tiles of the Winograd convolution (1 to "
                "%u)",
                e->n->id, e->n->label ? e->n->label : "", WINO_PARAM_TILES,
                tiles, bl.nc);
    return FALSE;
  }
  WeirEpilogueKind ek;
  const char *rp;
  g_autofree char *lo = NULL, *hi = NULL;
  if (!weir_kernel_epilogue_use(e, "the Winograd convolution", &ek, &rp, &lo,
                                &hi, error))
    return FALSE;
  g_autofree char *text = wino_text(&bl);
  g_autofree char *hname = g_strdup_printf("weir_wino_%s", bl.id);
  e->helper(e, hname, text);

  /* U packed once at load (a bound constant filter) */
  gint64 mpad = (m + pmr - 1) / pmr * pmr;
  g_autofree char *upk = NULL;
  const char *cut = strstr(text, "/* @RUN@");
  g_autofree char *ptext = g_strndup(text, cut ? (gsize)(cut - text) : 0);
  if (e->prepacked && cut) {
    g_autofree char *pname = g_strdup_printf("weir_wino_prepack_%s", bl.id);
    g_autofree char *pack =
        g_strdup_printf("%s((const float *)@SRC@, %" G_GINT64_FORMAT
                        ", %" G_GINT64_FORMAT ", %u, %u, %u, (float *)@DST@);",
                        pname, m, c, pmr, bl.kc, bl.mc);
    g_autofree char *p =
        e->prepacked(e, w, 36 * mpad * c * 4, pname, ptext, pack);
    if (p)
      upk = g_strdup_printf("(const float *)%s", p);
  }
  /* scratch: per thread one GEMM work slot and one region of V and M, U
   * (36 x m x c) when not pre-packed */
  guint threads = MAX(bl.threads, 1);
  gint64 slot = 0;
  gint64 bytes = wino_work_bytes(&bl, c, m, tiles, !upk, &slot);
  g_autofree char *ws = weir_kernel_scratch_arg(e, weir_expr_const(bytes));
  g_autofree char *n = e->expr_c(e, dim(x, 0)), *h = e->expr_c(e, dim(x, 2)),
                  *wd = e->expr_c(e, dim(x, 3)), *oh = e->expr_c(e, dim(y, 2)),
                  *ow = e->expr_c(e, dim(y, 3));
  g_autofree char *ph = e->expr_c(e, geo.pad_begin[0]);
  g_autofree char *pw = e->expr_c(e, geo.pad_begin[1]);
  const char *bp = e->in[2].c ? e->in[2].ptr : "NULL";
  g_autofree char *what = g_strdup_printf(
      "winograd F(4x4, 3x3)%s%s, %" G_GINT64_FORMAT " tiles a block",
      weir_kernel_epilogue_what(&ek),
      upk ? ", filters transformed at load" : "", tiles);
  emit_header(e, what);
  g_string_append_printf(
      e->code,
      "%s |= weir_wino_%s(%s, %s, %s, %s, %s, %s, %s, %" G_GINT64_FORMAT
      ", %s, %s, %" G_GINT64_FORMAT ", %s, %s, %s, %s, %d, %s, %s, "
      "%" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT ", %d, %s);\n",
      e->status, bl.id, e->in[0].ptr, e->in[1].ptr, upk ? upk : "NULL", bp,
      e->out[0].ptr, rp, n, c, h, wd, m, oh, ow, ph, pw, ek.act, lo, hi, tiles,
      threads, slot, upk ? 0 : 1, ws);
  return TRUE;
}

static const WeirNativeImpl wino_impl = {
    .op = "Conv",
    .impl = "winograd",
    .accepts = wino_accepts,
    .emit = wino_emit,
    .takes_epilogue = weir_kernel_takes_epilogue,
    .params = wino_params,
    .n_params = G_N_ELEMENTS(wino_params),
    .prefer = wino_prefer,
};

/* ------------------------------------------------ ConvGradInput */

/* The input gradient at unit stride is a convolution of dY (m channels,
 * padding 2 - pad) with the filter turned by 180 degrees in both spatial
 * axes and its channel axes swapped (docs/native.md, "ConvGradInput on the
 * Winograd convolution"): the flipped filter is written into the scratch
 * after the Winograd convolution's own blocks and transformed per call
 * (the filter is a parameter that changes every step). */
static const char grad_helper[] =
    "/* ConvGradInput on Weir's Winograd convolution: dx = conv3x3(dy, wf),\n"
    " * wf[ic][oc][i][j] = w[oc][ic][2 - i][2 - j], padding 2 - ph, 2 - pw;\n"
    " * wf lives in ws at byte wsz, after weir_wino_@S@'s scratch. */\n"
    "static int weir_wino_grad_input_@S@(const float *dy, const float *w,\n"
    "                                    float *dx, int64_t n, int64_t c,\n"
    "                                    int64_t h, int64_t wd, int64_t m,\n"
    "                                    int64_t oh, int64_t ow, int64_t ph,\n"
    "                                    int64_t pw, int64_t tbmax,\n"
    "                                    int64_t nthr, int64_t slot,\n"
    "                                    int64_t wsz, void *ws) {\n"
    "  float *wf = (float *)((char *)ws + wsz);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (c * m > 2048)\n"
    "#endif\n"
    "  for (int64_t ic = 0; ic < c; ic++)\n"
    "    for (int64_t oc = 0; oc < m; oc++)\n"
    "      for (int t = 0; t < 9; t++)\n"
    "        wf[(ic * m + oc) * 9 + t] = w[(oc * c + ic) * 9 + 8 - t];\n"
    "  return weir_wino_@S@(dy, wf, NULL, NULL, dx, NULL, n, m, oh, ow, c, h,\n"
    "                       wd, 2 - ph, 2 - pw, 0, 0.0f, 0.0f, tbmax, nthr,\n"
    "                       slot, 1, ws);\n"
    "}\n";

/* The node's two spatial values of ints attribute name. */
static gboolean grad_ints(const WeirNode *n, const char *name, guint count,
                          gint64 *v) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (!a || a->type != WEIR_ATTR_INTS || a->ints->len < count)
    return FALSE;
  for (guint i = 0; i < count; i++)
    v[i] = g_array_index(a->ints, gint64, i);
  return TRUE;
}

static gboolean wino_grad_accepts(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason) {
  /* the operand checks of Weir's GEMM input gradient (rank 4, row-major,
   * explicit attributes) */
  if (!weir_native_accepts_as("ConvGradInput", "weir", g, s, n, reason))
    return FALSE;
  const WeirContainer *dy = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *w = weir_native_port(g, s, n, TRUE, 1);
  const WeirContainer *dx = weir_native_port(g, s, n, FALSE, 0);
  if (dy->dtype != WEIR_DTYPE_F32 || w->dtype != WEIR_DTYPE_F32 ||
      dx->dtype != WEIR_DTYPE_F32) {
    *reason = g_strdup("the Winograd convolution is f32 only");
    return FALSE;
  }
  gint64 kh, kw, c, m;
  if (!dim_const(w, 2, &kh) || !dim_const(w, 3, &kw) || kh != 3 || kw != 3) {
    *reason = g_strdup("the Winograd convolution needs a 3x3 kernel");
    return FALSE;
  }
  gint64 st[2], dl[2], pads[4];
  if (!grad_ints(n, "strides", 2, st) || !grad_ints(n, "dilations", 2, dl) ||
      !grad_ints(n, "pads", 4, pads) ||
      weir_node_attr_int(n, "group", 1) != 1 || st[0] != 1 || st[1] != 1 ||
      dl[0] != 1 || dl[1] != 1) {
    *reason = g_strdup("the Winograd convolution needs stride 1, dilation 1 "
                       "and one group");
    return FALSE;
  }
  for (guint i = 0; i < 4; i++)
    if (pads[i] < 0 || pads[i] > 2) {
      *reason = g_strdup("the Winograd input gradient needs paddings of 0 to "
                         "2 (dY is padded by 2 - pad)");
      return FALSE;
    }
  if (!dim_const(w, 0, &m) || !dim_const(w, 1, &c) || m < 1 || c < 4) {
    *reason = g_strdup("the Winograd input gradient needs constant channel "
                       "counts and at least 4 input channels");
    return FALSE;
  }
  return TRUE;
}

/* The default: accepted, and the forward convolution is one the forward
 * rule gives to "winograd" (its output map is dY's). */
static gboolean wino_grad_prefer(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  g_autofree char *reason = NULL;
  if (!wino_grad_accepts(g, s, n, &reason))
    return FALSE;
  /* its flipped filter is transformed in every call */
  return measured_faster(weir_native_port(g, s, n, TRUE, 1),
                         weir_native_port(g, s, n, TRUE, 0), FALSE);
}

static gboolean wino_grad_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!wino_grad_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  const WeirContainer *dy = e->in[0].c, *w = e->in[1].c, *dx = e->out[0].c;
  gint64 c = 0, m = 0, pads[4] = {0};
  dim_const(w, 1, &c);
  dim_const(w, 0, &m);
  grad_ints(e->n, "pads", 4, pads);
  WeirGemmBlocking bl = {0};
  if (!weir_kernel_gemm_record(e, WEIR_DTYPE_F32, &bl, error))
    return FALSE;
  /* the Winograd convolution of dY: m input channels, c output channels */
  gint64 tiles = weir_native_param(e->n, WINO_PARAM_TILES,
                                   wino_default_tiles(&bl, m, c, dx));
  if (tiles < 1 || tiles > (gint64)bl.nc) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "node %u ('%s'): %s=%" G_GINT64_FORMAT
                " is not a block of tiles of the Winograd convolution (1 to "
                "%u)",
                e->n->id, e->n->label ? e->n->label : "", WINO_PARAM_TILES,
                tiles, bl.nc);
    return FALSE;
  }
  g_autofree char *text = wino_text(&bl);
  g_autofree char *hname = g_strdup_printf("weir_wino_%s", bl.id);
  e->helper(e, hname, text);
  GString *gt = g_string_new(grad_helper);
  g_string_replace(gt, "@S@", bl.id, 0);
  g_autofree char *gname = g_strdup_printf("weir_wino_grad_input_%s", bl.id);
  e->helper(e, gname, gt->str);
  g_string_free(gt, TRUE);
  /* scratch: the Winograd convolution's (m input channels, c output
   * channels, U of c x m) rounded to 64 bytes, then the flipped filter (c x
   * m x 9) */
  guint threads = MAX(bl.threads, 1);
  gint64 slot = 0;
  gint64 wsz = wino_work_bytes(&bl, m, c, tiles, TRUE, &slot);
  wsz = (wsz + 63) / 64 * 64;
  g_autofree char *ws =
      weir_kernel_scratch_arg(e, weir_expr_const(wsz + c * m * 9 * 4));
  g_autofree char *n = e->expr_c(e, dim(dx, 0)), *h = e->expr_c(e, dim(dx, 2)),
                  *wd = e->expr_c(e, dim(dx, 3)),
                  *oh = e->expr_c(e, dim(dy, 2)),
                  *ow = e->expr_c(e, dim(dy, 3));
  g_autofree char *what = g_strdup_printf(
      "winograd F(4x4, 3x3) of dY with the flipped filter, %" G_GINT64_FORMAT
      " tiles a block",
      tiles);
  emit_header(e, what);
  g_string_append_printf(
      e->code,
      "%s |= weir_wino_grad_input_%s(%s, %s, %s, %s, %" G_GINT64_FORMAT
      ", %s, %s, %" G_GINT64_FORMAT ", %s, %s, %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %s);\n",
      e->status, bl.id, e->in[0].ptr, e->in[1].ptr, e->out[0].ptr, n, c, h, wd,
      m, oh, ow, pads[0], pads[1], tiles, threads, slot, wsz, ws);
  return TRUE;
}

static const WeirNativeImpl wino_grad_impl = {
    .op = "ConvGradInput",
    .impl = "winograd",
    .accepts = wino_grad_accepts,
    .emit = wino_grad_emit,
    .params = wino_params,
    .n_params = G_N_ELEMENTS(wino_params),
    .prefer = wino_grad_prefer,
};

void weir_native_register_winograd(void) {
  weir_native_register(&wino_impl);
  weir_native_register(&wino_grad_impl);
}
