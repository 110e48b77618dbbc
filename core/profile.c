/* profile.c — per-node times of an instrumented kernel beside the node's
 * FLOPs, bytes and roofline bound (weir-profile.h).
 *
 * The figures of each slot of the instrumented kernel come from the
 * analysis of the lowered program (the same weir_lower call as the code
 * generator's prepare step, so the ids agree); the SVG is plain text
 * written here. */
#include "weir-profile.h"

#include <math.h>
#include <string.h>

#include "weir-analysis.h"
#include "weir-lower.h"

static double now_seconds(void) {
  return (double)g_get_monotonic_time() * 1e-6;
}

static void profile_node_free(gpointer p) {
  WeirProfileNode *n = p;
  g_free(n->state_label);
  g_free(n->label);
  g_free(n->op);
  g_free(n);
}

void weir_profile_free(WeirProfile *p) {
  if (!p)
    return;
  g_ptr_array_unref(p->nodes);
  g_free(p);
}

static double median_of(double *v, guint n) {
  WeirBenchResult r = {0};
  weir_bench_summarize(v, n, &r);
  double m = r.median;
  weir_bench_result_clear(&r);
  return m;
}

/* Sums q into *sum; FALSE once a part is unknown. */
static gboolean add_known(const WeirQuantity *q, gint64 *sum) {
  if (!q->known)
    return FALSE;
  *sum += q->value;
  return TRUE;
}

/* The figures of node id of state s of the lowered program (analysis a). */
static void node_figures(const WeirAnalysis *a, const WeirState *s, guint id,
                         WeirProfileNode *pn) {
  const WeirNode *n = weir_state_node(s, id);
  pn->state_label = g_strdup(s->label ? s->label : "");
  if (!n) {
    pn->label = g_strdup_printf("node %u", id);
    pn->op = g_strdup("?");
    return;
  }
  pn->label = g_strdup(n->label ? n->label : "");
  const WeirNodeCost *nc = weir_analysis_node(a, id);
  gint64 bytes = 0;
  gboolean known = nc != NULL;
  switch (n->kind) {
  case WEIR_NODE_LIBRARY:
    pn->op = g_strdup(n->op ? n->op : "library");
    break;
  case WEIR_NODE_MAP_ENTRY:
    pn->op = g_strdup("map");
    break;
  case WEIR_NODE_ACCESS:
    pn->op = g_strdup("copy");
    break;
  default:
    pn->op = g_strdup(weir_node_kind_name(n->kind));
    break;
  }
  if (known && nc->traffic.known) {
    /* the modeled memory traffic of the operation: a map's by the model,
     * a library call's, a copy's or a tasklet's operands once, a read the
     * cache serves after an earlier operation 0 */
    bytes = nc->traffic.value;
  } else if (known && n->kind == WEIR_NODE_MAP_ENTRY) {
    /* no model (no cache size, or a figure of the state unknown): the
     * logical volume of a map is no memory traffic, so no bytes */
    known = FALSE;
  } else if (known && n->kind == WEIR_NODE_ACCESS) {
    known = add_known(&nc->bytes_in, &bytes);
  } else if (known) {
    /* each operand once: the model's rule for an operation, without the
     * reuse between operations */
    known =
        add_known(&nc->bytes_in, &bytes) && add_known(&nc->bytes_out, &bytes);
  }
  pn->bytes_known = known;
  pn->bytes = known ? bytes : 0;
  pn->flops_known = nc && nc->flops.known;
  pn->flops = pn->flops_known ? nc->flops.value : 0;
}

/* The container that top-level node id of s writes first (through its
 * outgoing memlets, or its map exit's), or NULL. (borrowed) */
static const char *written_container(const WeirState *s, guint id) {
  const WeirNode *n = weir_state_node(s, id);
  if (!n)
    return NULL;
  guint from = id;
  if (n->kind == WEIR_NODE_MAP_ENTRY)
    for (guint i = 0; i < s->nodes->len; i++) {
      const WeirNode *x = g_ptr_array_index(s->nodes, i);
      if (x->kind == WEIR_NODE_MAP_EXIT && x->entry == id)
        from = x->id;
    }
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    const WeirNode *dst = weir_state_node(s, m->dst);
    if (m->src == from && m->data && dst && dst->kind == WEIR_NODE_ACCESS)
      return m->data;
  }
  return NULL;
}

/* WeirProfileNode.source of lowered node id of state sid. */
static guint source_node(const WeirGraph *g, const WeirGraph *lowered,
                         guint sid, guint id) {
  const WeirState *s = weir_graph_state(g, sid);
  const WeirState *ls = weir_graph_state(lowered, sid);
  if (!s || !ls)
    return 0;
  if (weir_state_node(s, id))
    return id;
  const char *data = written_container(ls, id);
  if (!data)
    return 0;
  g_autoptr(GError) ignored = NULL;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, &ignored);
  if (!sc)
    return 0;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS || n->kind == WEIR_NODE_MAP_EXIT ||
        weir_scopes_parent(sc, n->id) != 0)
      continue;
    if (g_strcmp0(written_container(s, n->id), data) == 0)
      return n->id;
  }
  return 0;
}

/* The roofline figures of pn from its time (p's peak and bandwidth). */
static void node_roofline(const WeirProfile *p, WeirProfileNode *pn) {
  double t = pn->seconds;
  /* no rate from a time the clock cannot resolve (two clock_gettime reads
   * cost tens of nanoseconds) */
  if (pn->flops_known && t >= WEIR_PROFILE_RATE_MIN_SECONDS)
    pn->gflops = (double)pn->flops / t * 1e-9;
  if (pn->bytes_known && t >= WEIR_PROFILE_RATE_MIN_SECONDS)
    pn->gbs = (double)pn->bytes / t * 1e-9;
  if (!pn->flops_known || !pn->bytes_known || p->peak_gflops <= 0 ||
      p->bandwidth_gbs <= 0)
    return;
  double tc = (double)pn->flops / (p->peak_gflops * 1e9);
  double tm = (double)pn->bytes / (p->bandwidth_gbs * 1e9);
  pn->bound_seconds = MAX(tc, tm);
  pn->bound = tc >= tm ? "compute" : "memory";
  if (t > 0)
    pn->fraction = pn->bound_seconds / t;
}

static WeirKernel *compile_kernel(const WeirGraph *g,
                                  const WeirProfileOptions *o, gboolean profile,
                                  GError **error) {
  WeirCompileOptions copts = o->compile ? *o->compile : (WeirCompileOptions){0};
  copts.profile = profile;
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &copts, NULL, error);
  if (!k)
    return NULL;
  if (o->threads > 0 && !weir_kernel_set_threads(k, o->threads, error))
    return NULL;
  return g_steal_pointer(&k);
}

WeirProfile *weir_profile_run(const WeirGraph *g, GHashTable *symbols,
                              GHashTable *args,
                              const WeirProfileOptions *options,
                              GError **error) {
  g_return_val_if_fail(g != NULL && args != NULL, NULL);
  WeirProfileOptions o = options ? *options : (WeirProfileOptions){0};
  guint reps = o.repetitions ? o.repetitions : 10;

  /* the nodes as the code generator sees them */
  g_autoptr(WeirGraph) lowered = weir_graph_copy(g);
  if (!weir_lower(lowered,
                  &(WeirLowerOptions){.native = TRUE, .split_epilogues = TRUE},
                  error))
    return NULL;
  gint64 cache = o.hw ? weir_hw_model_cache_bytes(o.hw) : 0;
  g_autoptr(WeirAnalysis) a =
      weir_analysis_compute_traffic(lowered, symbols, cache, error);
  if (!a)
    return NULL;

  g_autoptr(WeirKernel) plain = compile_kernel(g, &o, FALSE, error);
  if (!plain)
    return NULL;
  g_autoptr(WeirKernel) timed = compile_kernel(g, &o, TRUE, error);
  if (!timed)
    return NULL;
  guint n = 0;
  const gint64 *ids = NULL;
  double *slots = NULL;
  if (!weir_kernel_profile(timed, &n, &ids, &slots)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "program '%s': the instrumented kernel has no profile slots",
                g->name);
    return NULL;
  }

  /* Both kernels in alternation, so that both see the same load of the
   * machine: each repetition runs the plain kernel (its run time) and then
   * the instrumented one (every slot, and its whole run). */
  for (guint w = 0; w < o.warmup; w++)
    if (!weir_kernel_run(plain, symbols, args, error) ||
        !weir_kernel_run(timed, symbols, args, error))
      return NULL;
  g_autofree double *per = g_new0(double, (gsize)n *reps + 1);
  g_autofree double *whole = g_new0(double, reps);
  g_autofree double *runs = g_new0(double, reps);
  for (guint r = 0; r < reps; r++) {
    double t0 = now_seconds();
    if (!weir_kernel_run(plain, symbols, args, error))
      return NULL;
    runs[r] = now_seconds() - t0;
    memset(slots, 0, sizeof(double) * n);
    t0 = now_seconds();
    if (!weir_kernel_run(timed, symbols, args, error))
      return NULL;
    whole[r] = now_seconds() - t0;
    for (guint i = 0; i < n; i++)
      per[(gsize)i * reps + r] = slots[i];
  }
  double run_median = median_of(runs, reps);
  g_autofree double *sums = g_new0(double, reps);
  for (guint r = 0; r < reps; r++)
    for (guint i = 0; i < n; i++)
      sums[r] += per[(gsize)i * reps + r];

  WeirProfile *p = g_new0(WeirProfile, 1);
  p->nodes = g_ptr_array_new_with_free_func(profile_node_free);
  p->repetitions = reps;
  p->run_median = run_median;
  p->instrumented_median = median_of(whole, reps);
  p->sum_median = median_of(sums, reps);
  p->threads = o.threads;
  if (o.hw && o.hw->measured) {
    p->bandwidth_gbs = o.hw->bandwidth_gbs;
    p->peak_gflops = o.threads == 1  ? o.hw->peak_gflops_1t
                     : o.threads > 1 ? MIN(o.hw->peak_gflops_all,
                                           o.hw->peak_gflops_1t * o.threads)
                                     : o.hw->peak_gflops_all;
  }
  for (guint i = 0; i < n; i++) {
    WeirProfileNode *pn = g_new0(WeirProfileNode, 1);
    pn->state = (guint)ids[2 * i];
    pn->node = (guint)ids[2 * i + 1];
    pn->seconds = median_of(per + (gsize)i * reps, reps);
    p->node_sum += pn->seconds;
    const WeirState *s = weir_graph_state(lowered, pn->state);
    pn->source = source_node(g, lowered, pn->state, pn->node);
    if (s)
      node_figures(a, s, pn->node, pn);
    else {
      pn->state_label = g_strdup_printf("state %u", pn->state);
      pn->label = g_strdup_printf("node %u", pn->node);
      pn->op = g_strdup("?");
    }
    g_ptr_array_add(p->nodes, pn);
  }
  for (guint i = 0; i < p->nodes->len; i++) {
    WeirProfileNode *pn = g_ptr_array_index(p->nodes, i);
    pn->share = p->node_sum > 0 ? pn->seconds / p->node_sum : 0;
    node_roofline(p, pn);
  }
  return p;
}

/* ------------------------------------------------------------------ SVG */

static void svg_text(GString *s, double x, double y, const char *anchor,
                     int size, const char *text) {
  g_autofree char *esc = g_markup_escape_text(text, -1);
  g_string_append_printf(s,
                         "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" "
                         "text-anchor=\"%s\">%s</text>\n",
                         x, y, size, anchor, esc);
}

gboolean weir_profile_roofline_point(const WeirProfileNode *n,
                                     double *intensity, double *gflops) {
  g_return_val_if_fail(n != NULL, FALSE);
  /* a node timed below WEIR_PROFILE_RATE_MIN_SECONDS has no rate (gflops
   * 0): it is no point, or the axes would reach log10(0) */
  if (!n->flops_known || !n->bytes_known || n->flops <= 0 || n->bytes <= 0 ||
      n->seconds <= 0 || !(n->gflops > 0) || !isfinite(n->gflops))
    return FALSE;
  if (intensity)
    *intensity = (double)n->flops / (double)n->bytes;
  if (gflops)
    *gflops = n->gflops;
  return TRUE;
}

void weir_profile_roofline_axes(const WeirProfile *p, WeirRooflineAxes *out) {
  g_return_if_fail(p != NULL && out != NULL);
  double xlo = 1e-2, xhi = 1e2, ylo = 1e-2, yhi = 1e2;
  double ridge = p->bandwidth_gbs > 0 ? p->peak_gflops / p->bandwidth_gbs : 1;
  for (guint i = 0; i < p->nodes->len; i++) {
    double x, y;
    if (!weir_profile_roofline_point(g_ptr_array_index(p->nodes, i), &x, &y))
      continue;
    xlo = MIN(xlo, x);
    xhi = MAX(xhi, x);
    ylo = MIN(ylo, y);
    yhi = MAX(yhi, y);
  }
  if (p->peak_gflops > 0) {
    yhi = MAX(yhi, p->peak_gflops);
    xhi = MAX(xhi, ridge * 10);
    xlo = MIN(xlo, ridge / 100);
  }
  /* at most 12 decades each way of the axes (the drawing loops over them) */
  xlo = MAX(xlo, 1e-6);
  xhi = MIN(xhi, 1e6);
  ylo = MAX(ylo, 1e-6);
  yhi = MIN(yhi, 1e6);
  out->lx0 = floor(log10(xlo));
  out->lx1 = ceil(log10(xhi));
  out->ly0 = floor(log10(ylo));
  out->ly1 = ceil(log10(yhi) + 0.3);
  if (out->lx1 <= out->lx0)
    out->lx1 = out->lx0 + 1;
  if (out->ly1 <= out->ly0)
    out->ly1 = out->ly0 + 1;
  out->ridge = ridge;
}

char *weir_profile_roofline_svg(const WeirProfile *p, const char *title) {
  g_return_val_if_fail(p != NULL, NULL);
  const double W = 900, H = 600, L = 80, R = 30, T = 50, B = 60;
  /* the points: intensity (FLOP/B) and GFLOP/s */
  g_autoptr(GArray) xs = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) ys = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(p->nodes, i);
    double x, y;
    if (!weir_profile_roofline_point(n, &x, &y))
      continue;
    g_array_append_val(xs, x);
    g_array_append_val(ys, y);
    g_ptr_array_add(names, n->label);
  }
  WeirRooflineAxes ax;
  weir_profile_roofline_axes(p, &ax);
  double lx0 = ax.lx0, lx1 = ax.lx1, ly0 = ax.ly0, ly1 = ax.ly1;
  double ridge = ax.ridge;
#define PX(v) (L + (log10(v) - lx0) / (lx1 - lx0) * (W - L - R))
#define PY(v) (H - B - (log10(v) - ly0) / (ly1 - ly0) * (H - T - B))
  GString *s = g_string_new(NULL);
  g_string_append_printf(s,
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<svg xmlns=\"http://www.w3.org/2000/svg\" "
                         "width=\"%.0f\" height=\"%.0f\" "
                         "font-family=\"sans-serif\">\n"
                         "<rect width=\"100%%\" height=\"100%%\" "
                         "fill=\"white\"/>\n",
                         W, H);
  svg_text(s, W / 2, 28, "middle", 16, title ? title : "roofline");
  /* grid and decade labels */
  for (double d = lx0; d <= lx1 + 1e-9; d++) {
    double x = PX(pow(10, d));
    g_string_append_printf(s,
                           "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                           "y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                           x, T, x, H - B);
    g_autofree char *lab = g_strdup_printf("%g", pow(10, d));
    svg_text(s, x, H - B + 18, "middle", 11, lab);
  }
  for (double d = ly0; d <= ly1 + 1e-9; d++) {
    double y = PY(pow(10, d));
    g_string_append_printf(s,
                           "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                           "y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                           L, y, W - R, y);
    g_autofree char *lab = g_strdup_printf("%g", pow(10, d));
    svg_text(s, L - 6, y + 4, "end", 11, lab);
  }
  g_string_append_printf(s,
                         "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                         "height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n",
                         L, T, W - L - R, H - T - B);
  svg_text(s, (L + W - R) / 2, H - 18, "middle", 13,
           "operational intensity (FLOP/byte of modeled traffic)");
  g_autofree char *ylab = g_strdup_printf(
      "<text x=\"18\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 18 %.1f)\">GFLOP/s</text>\n",
      (T + H - B) / 2, (T + H - B) / 2);
  g_string_append(s, ylab);
  /* the roof: bandwidth slope up to the ridge, then the peak */
  if (p->peak_gflops > 0 && p->bandwidth_gbs > 0) {
    double x0 = pow(10, lx0), y0 = x0 * p->bandwidth_gbs;
    double ymin = pow(10, ly0);
    if (y0 < ymin) {
      x0 = ymin / p->bandwidth_gbs;
      y0 = ymin;
    }
    g_string_append_printf(
        s,
        "<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" "
        "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
        PX(x0), PY(y0), PX(ridge), PY(p->peak_gflops), PX(pow(10, lx1)),
        PY(p->peak_gflops));
    g_autofree char *roof =
        g_strdup_printf("peak %.1f GFLOP/s, bandwidth %.1f GB/s",
                        p->peak_gflops, p->bandwidth_gbs);
    svg_text(s, W - R - 4, PY(p->peak_gflops) - 6, "end", 11, roof);
  }
  for (guint i = 0; i < xs->len; i++) {
    double x = PX(g_array_index(xs, double, i));
    double y = PY(g_array_index(ys, double, i));
    g_string_append_printf(s,
                           "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                           "fill=\"#36c\"/>\n",
                           x, y);
    svg_text(s, x + 6, y - 4, "start", 10, g_ptr_array_index(names, i));
  }
#undef PX
#undef PY
  g_string_append(s, "</svg>\n");
  return g_string_free(s, FALSE);
}
