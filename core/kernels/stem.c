/* stem.c — Weir's direct convolution for few input channels, the native
 * implementation "stem" of Conv (docs/native.md, "Weir's stem
 * convolution"); the helper is core/kernels/stem-helper.c, pasted from
 * the kernels' GResource.
 *
 *  - Accepts what "im2col" accepts, in f32, with one group, constant
 *    channel counts and kernel size, and at most WEIR_STEM_MAX_TAPS taps
 *    (C * KH * KW) per output: a network's first convolution (3 input
 *    channels), where the GEMM's patches are short and their packing
 *    costs as much as the FMAs.
 *  - Default (weir_native_default_impl through .prefer): where measured
 *    faster than "weir" on this 2-core AVX-512 machine: at most
 *    WEIR_STEM_PREFER_TAPS taps or at most WEIR_STEM_PREFER_CHANNELS
 *    input channels, 8 or more output channels, stride 2
 *    (docs/performance.md, "The stem convolution and global pooling
 *    (mobile14n)" for MobileNetV2's 3x3 stem, "ResNet's 7x7 stem and its
 *    MaxPool (stem14p)" for ResNet's 7x7 one).
 *  - Vectors of the hardware profile's width (16 lanes on AVX-512, 8 on
 *    AVX2, 4 portable), up to three per block on AVX-512 (32 registers),
 *    one elsewhere.
 */
#include <gio/gio.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"
#include "weir-ops-linalg.h"

#define HELPER_RESOURCE "/org/weir/kernels/stem-helper.c"

/* Accepted: at most this many taps per output (ResNet's 7x7 stem on 3
 * channels is 147; the per-thread phase rows, 42 of 128 floats there,
 * stay in L1 for rows of a few hundred columns). */
#define WEIR_STEM_MAX_TAPS 160
/* The default choice (measured, docs/performance.md): at most this many
 * taps on any number of input channels (MobileNetV2's 27), or at most
 * WEIR_STEM_MAX_TAPS on an image's 3 channels or fewer (75 and ResNet's
 * 147 measured, "ResNet's 7x7 stem and its MaxPool (stem14p)"). */
#define WEIR_STEM_PREFER_TAPS 32
#define WEIR_STEM_PREFER_CHANNELS 3

GResource *weir_kernels_get_resource(void);

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean dim_const(const WeirContainer *c, guint d, gint64 *v) {
  return weir_expr_is_const(dim(c, d), v);
}

static gboolean stem_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char **reason) {
  /* the operand checks of the im2col implementation (row-major, 2-D) */
  if (!weir_native_accepts_as("Conv", "im2col", g, s, n, reason))
    return FALSE;
  const WeirContainer *w = weir_native_port(g, s, n, TRUE, 1);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (y->dtype != WEIR_DTYPE_F32) {
    *reason = g_strdup_printf("'%s' is %s; the stem kernel is f32", y->name,
                              weir_dtype_name(y->dtype));
    return FALSE;
  }
  if (weir_node_attr_int(n, "group", 1) != 1) {
    *reason = g_strdup("the stem kernel takes one group only");
    return FALSE;
  }
  gint64 m, c, kh, kw;
  if (!dim_const(w, 0, &m) || !dim_const(w, 1, &c) || !dim_const(w, 2, &kh) ||
      !dim_const(w, 3, &kw)) {
    *reason = g_strdup_printf("the filter '%s' has a symbolic shape; the "
                              "stem kernel needs constant channels and size",
                              w->name);
    return FALSE;
  }
  if (c * kh * kw > WEIR_STEM_MAX_TAPS) {
    *reason = g_strdup_printf("%" G_GINT64_FORMAT
                              " taps per output (C * KH * KW); the stem kernel "
                              "takes at most %d",
                              c * kh * kw, WEIR_STEM_MAX_TAPS);
    return FALSE;
  }
  return TRUE;
}

/* The default: accepted, few taps or at most 3 input channels, at least
 * one block of 8 output channels, stride 2 in both axes (where it was
 * measured faster than the implicit GEMM). */
static gboolean stem_prefer(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  g_autofree char *reason = NULL;
  if (!stem_accepts(g, s, n, &reason))
    return FALSE;
  const WeirContainer *w = weir_native_port(g, s, n, TRUE, 1);
  gint64 c = 0, kh = 0, kw = 0;
  dim_const(w, 1, &c);
  dim_const(w, 2, &kh);
  dim_const(w, 3, &kw);
  const GArray *st = weir_node_attr_ints(n, "strides");
  gint64 sh = 1, sw = 1;
  if (st && st->len == 2) {
    sh = g_array_index(st, gint64, 0);
    sw = g_array_index(st, gint64, 1);
  }
  gint64 m = 0;
  dim_const(w, 0, &m);
  return (c * kh * kw <= WEIR_STEM_PREFER_TAPS ||
          c <= WEIR_STEM_PREFER_CHANNELS) &&
         m >= 8 && sh == 2 && sw == 2;
}

static void emit_header(WeirNativeEmit *e, const char *what) {
  g_autofree char *l = weir_kernel_comment_label(e->n);
  g_string_append_printf(e->code, "/* %s '%s' (node %u): %s */\n", e->n->op, l,
                         e->n->id, what);
}

char *weir_kernel_stem_text(WeirHwIsa isa, guint vl) {
  g_autoptr(GBytes) bytes =
      g_resource_lookup_data(weir_kernels_get_resource(), HELPER_RESOURCE,
                             G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
  g_return_val_if_fail(bytes != NULL, NULL);
  gsize len = 0;
  const char *data = g_bytes_get_data(bytes, &len);
  GString *s = g_string_new_len(data, (gssize)len);
  GString *even = g_string_new(NULL), *odd = g_string_new(NULL);
  for (guint i = 0; i < vl; i++) {
    g_string_append_printf(even, "%s%u", i ? ", " : "", 2 * i);
    g_string_append_printf(odd, "%s%u", i ? ", " : "", 2 * i + 1);
  }
  char buf[16];
  g_string_replace(s, "@EVEN@", even->str, 0);
  g_string_replace(s, "@ODD@", odd->str, 0);
  g_string_replace(s, "@TGT@", weir_kernel_isa_target(isa), 0);
  /* three vectors of columns per block where there are 32 registers (24
   * accumulators), else one; blocks of NBH (2, else 1) take the rest of a
   * row */
  g_string_replace(s, "@NBH@", isa == WEIR_HW_ISA_AVX512 ? "2" : "1", 0);
  g_string_replace(s, "@NB@", isa == WEIR_HW_ISA_AVX512 ? "3" : "1", 0);
  g_snprintf(buf, sizeof buf, "%u", vl);
  g_string_replace(s, "@VL@", buf, 0);
  g_string_free(even, TRUE);
  g_string_free(odd, TRUE);
  return g_string_free(s, FALSE);
}

static gboolean stem_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!stem_accepts(e->g, e->s, e->n, &reason)) {
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
  WeirEpilogueKind ek;
  const char *rp;
  g_autofree char *lo = NULL, *hi = NULL;
  if (!weir_kernel_epilogue_use(e, "the stem kernel", &ek, &rp, &lo, &hi,
                                error))
    return FALSE;
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirHwIsa isa = hw ? hw->isa : WEIR_HW_ISA_GENERIC;
  guint vl = isa == WEIR_HW_ISA_AVX512 ? 16 : isa == WEIR_HW_ISA_AVX2 ? 8 : 4;
  weir_kernel_act_record(e, isa, vl, WEIR_DTYPE_F32);
  g_autofree char *text = weir_kernel_stem_text(isa, vl);
  e->helper(e, "weir_stem_f32", text);
  e->uses_status = TRUE;
  const char *bp = e->in[2].c ? e->in[2].ptr : "NULL";
  g_autofree char *n = e->expr_c(e, dim(x, 0)), *c = e->expr_c(e, dim(x, 1)),
                  *h = e->expr_c(e, dim(x, 2)), *wd = e->expr_c(e, dim(x, 3)),
                  *m = e->expr_c(e, dim(w, 0)), *kh = e->expr_c(e, dim(w, 2)),
                  *kw = e->expr_c(e, dim(w, 3)), *oh = e->expr_c(e, dim(y, 2)),
                  *ow = e->expr_c(e, dim(y, 3));
  g_autofree char *ph = e->expr_c(e, geo.pad_begin[0]);
  g_autofree char *pw = e->expr_c(e, geo.pad_begin[1]);
  g_autofree char *what = g_strdup_printf("stem (direct, few input channels)%s",
                                          weir_kernel_epilogue_what(&ek));
  emit_header(e, what);
  g_string_append_printf(
      e->code,
      "%s |= weir_stem_f32(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
      "%s, %s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %s, %s, %d, %s, %s);\n",
      e->status, e->in[0].ptr, e->in[1].ptr, bp, e->out[0].ptr, rp, n, c, h, wd,
      m, kh, kw, oh, ow, geo.strides[0], geo.strides[1], geo.dilations[0],
      geo.dilations[1], ph, pw, ek.act, lo, hi);
  return TRUE;
}

static const WeirNativeImpl stem_impl = {
    .op = "Conv",
    .impl = "stem",
    .accepts = stem_accepts,
    .emit = stem_emit,
    .takes_epilogue = weir_kernel_takes_epilogue,
    .prefer = stem_prefer,
};

void weir_native_register_stem(void) {
  weir_native_register(&stem_impl);
}
