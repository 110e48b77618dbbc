/* state-order.c: ranks, reachability and loops of a program's states. */
#include "weir-analysis.h"

static gint state_index_of(const WeirGraph *g, guint id) {
  for (guint i = 0; i < g->states->len; i++)
    if (((const WeirState *)g_ptr_array_index(g->states, i))->id == id)
      return (gint)i;
  return -1;
}

static int cmp_uint(gconstpointer a, gconstpointer b) {
  guint x = *(const guint *)a, y = *(const guint *)b;
  return x < y ? -1 : x > y;
}

/* Successor state indexes of every state (unique, sorted: states are kept
 * in id order, so index order is id order). */
static GPtrArray *state_successors(const WeirGraph *g) {
  GPtrArray *succ =
      g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  for (guint i = 0; i < g->states->len; i++)
    g_ptr_array_add(succ, g_array_new(FALSE, FALSE, sizeof(guint)));
  for (guint t = 0; t < g->transitions->len; t++) {
    const WeirTransition *tr = g_ptr_array_index(g->transitions, t);
    gint si = state_index_of(g, tr->src), di = state_index_of(g, tr->dst);
    if (si < 0 || di < 0)
      continue;
    GArray *arr = g_ptr_array_index(succ, si);
    gboolean seen = FALSE;
    for (guint k = 0; k < arr->len && !seen; k++)
      seen = g_array_index(arr, guint, k) == (guint)di;
    if (!seen) {
      guint d = (guint)di;
      g_array_append_val(arr, d);
    }
  }
  for (guint i = 0; i < succ->len; i++)
    g_array_sort(g_ptr_array_index(succ, i), cmp_uint);
  return succ;
}

static void compute_ranks(WeirStateOrder *o, const WeirGraph *g,
                          GPtrArray *succ) {
  guint n = o->n;
  g_autofree gboolean *visited = g_new0(gboolean, n ? n : 1);
  g_autoptr(GArray) post = g_array_new(FALSE, FALSE, sizeof(guint));
  gint start = state_index_of(g, g->start);
  if (start >= 0) {
    /* iterative DFS: a stack of (state, next successor to visit) */
    g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(guint) * 2);
    guint top[2] = {(guint)start, 0};
    g_array_append_val(stack, top);
    visited[start] = TRUE;
    while (stack->len) {
      guint *fr =
          (guint *)(void *)(stack->data + (stack->len - 1) * sizeof(guint) * 2);
      GArray *arr = g_ptr_array_index(succ, fr[0]);
      if (fr[1] < arr->len) {
        guint next = g_array_index(arr, guint, fr[1]);
        fr[1]++;
        if (!visited[next]) {
          visited[next] = TRUE;
          guint f2[2] = {next, 0};
          g_array_append_val(stack, f2);
        }
      } else {
        g_array_append_val(post, fr[0]);
        g_array_set_size(stack, stack->len - 1);
      }
    }
  }
  guint r = 0;
  for (guint k = post->len; k-- > 0;)
    o->rank[g_array_index(post, guint, k)] = r++;
  for (guint i = 0; i < n; i++)
    if (!visited[i])
      o->rank[i] = r++;
  for (guint i = 0; i < n; i++)
    o->by_rank[o->rank[i]] = i;
}

static void compute_reach(WeirStateOrder *o, GPtrArray *succ) {
  guint n = o->n;
  g_autoptr(GArray) work = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < n; i++) {
    gboolean *row = o->reach + (gsize)i * n;
    g_array_set_size(work, 0);
    g_array_append_val(work, i);
    while (work->len) {
      guint x = g_array_index(work, guint, work->len - 1);
      g_array_set_size(work, work->len - 1);
      GArray *arr = g_ptr_array_index(succ, x);
      for (guint k = 0; k < arr->len; k++) {
        guint y = g_array_index(arr, guint, k);
        if (!row[y]) {
          row[y] = TRUE;
          g_array_append_val(work, y);
        }
      }
    }
  }
}

WeirStateOrder *weir_state_order_new(const WeirGraph *g) {
  WeirStateOrder *o = g_new0(WeirStateOrder, 1);
  o->n = g->states->len;
  o->rank = g_new0(guint, o->n ? o->n : 1);
  o->by_rank = g_new0(guint, o->n ? o->n : 1);
  o->reach = g_new0(gboolean, (gsize)o->n * o->n + 1);
  g_autoptr(GPtrArray) succ = state_successors(g);
  compute_ranks(o, g, succ);
  compute_reach(o, succ);
  return o;
}

void weir_state_order_free(WeirStateOrder *o) {
  if (!o)
    return;
  g_free(o->rank);
  g_free(o->by_rank);
  g_free(o->reach);
  g_free(o);
}

gboolean weir_state_order_widen(const WeirStateOrder *o, guint *lo, guint *hi) {
  guint n = o->n, a = *lo, b = *hi;
  gboolean looped = a != b, changed = TRUE;
  while (changed) {
    changed = FALSE;
    for (guint r = a; r <= b; r++) {
      guint x = o->by_rank[r];
      if (!o->reach[(gsize)x * n + x])
        continue;
      looped = TRUE;
      /* the loop of x: states y with x ->+ y ->+ x */
      for (guint y = 0; y < n; y++) {
        if (!o->reach[(gsize)x * n + y] || !o->reach[(gsize)y * n + x])
          continue;
        if (o->rank[y] < a) {
          a = o->rank[y];
          changed = TRUE;
        }
        if (o->rank[y] > b) {
          b = o->rank[y];
          changed = TRUE;
        }
      }
    }
  }
  *lo = a;
  *hi = b;
  return looped;
}
