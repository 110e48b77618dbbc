/* chain-program.h — the chain of element-wise maps the GUI's performance
 * figures use (docs/performance.md, "GUI"): `ops` maps over 1,024 floats,
 * each access -> map entry -> tasklet (b = a + a) -> map exit -> access,
 * so 4 * ops + 1 nodes (500 maps: 2,001 nodes).  Included by
 * tests/gui/test-gui-app.c, tests/bench/bench-transforms.c and
 * tests/transforms/test-site-lists.c. */
#ifndef WEIR_TESTS_CHAIN_PROGRAM_H
#define WEIR_TESTS_CHAIN_PROGRAM_H

#include <glib.h>

/* The chain program as IR JSON (transfer full). */
static inline char *chain_json(guint ops) {
  GString *j = g_string_new("{\"format\": \"weir-ir\", \"version\": 1, "
                            "\"name\": \"chain\", \"symbols\": [], "
                            "\"containers\": [");
  guint id = 1;
  for (guint i = 0; i <= ops; i++)
    g_string_append_printf(j,
                           "%s{\"id\": %u, \"name\": \"x%u\", \"dtype\": "
                           "\"f32\", \"shape\": [\"1024\"]%s}",
                           i ? ", " : "", id++, i,
                           i == 0 || i == ops ? "" : ", \"transient\": true");
  guint state = id++;
  g_string_append_printf(j,
                         "], \"start\": %u, \"states\": [{\"id\": %u, "
                         "\"label\": \"main\", \"nodes\": [",
                         state, state);
  GString *e = g_string_new(NULL);
  guint prev = id++;
  g_string_append_printf(j,
                         "{\"id\": %u, \"kind\": \"access\", \"label\": "
                         "\"x0\", \"data\": \"x0\"}",
                         prev);
  for (guint i = 0; i < ops; i++) {
    guint en = id++, t = id++, ex = id++, acc = id++;
    g_string_append_printf(
        j,
        ", {\"id\": %u, \"kind\": \"map_entry\", \"label\": \"op%u\", "
        "\"in\": [\"IN_x%u\"], \"out\": [\"OUT_x%u\"], \"params\": [\"i\"], "
        "\"ranges\": [\"0:1024\"], \"schedule\": \"parallel\"}"
        ", {\"id\": %u, \"kind\": \"tasklet\", \"label\": \"op%u\", \"in\": "
        "[\"a\"], \"out\": [\"b\"], \"code\": \"b = a + a\"}"
        ", {\"id\": %u, \"kind\": \"map_exit\", \"label\": \"op%u\", "
        "\"entry\": %u, \"in\": [\"IN_x%u\"], \"out\": [\"OUT_x%u\"]}"
        ", {\"id\": %u, \"kind\": \"access\", \"label\": \"x%u\", \"data\": "
        "\"x%u\"}",
        en, i, i, i, t, i, ex, i, en, i + 1, i + 1, acc, i + 1, i + 1);
    g_string_append_printf(
        e,
        "%s{\"id\": %u, \"src\": %u, \"dst\": %u, \"dst_conn\": \"IN_x%u\", "
        "\"data\": \"x%u\", \"subset\": \"0:1024\"}",
        i ? ", " : "", id++, prev, en, i, i);
    g_string_append_printf(
        e,
        ", {\"id\": %u, \"src\": %u, \"src_conn\": \"OUT_x%u\", \"dst\": %u, "
        "\"dst_conn\": \"a\", \"data\": \"x%u\", \"subset\": \"i\"}",
        id++, en, i, t, i);
    g_string_append_printf(
        e,
        ", {\"id\": %u, \"src\": %u, \"src_conn\": \"b\", \"dst\": %u, "
        "\"dst_conn\": \"IN_x%u\", \"data\": \"x%u\", \"subset\": \"i\"}",
        id++, t, ex, i + 1, i + 1);
    g_string_append_printf(
        e,
        ", {\"id\": %u, \"src\": %u, \"src_conn\": \"OUT_x%u\", \"dst\": %u, "
        "\"data\": \"x%u\", \"subset\": \"0:1024\"}",
        id++, ex, i + 1, acc, i + 1);
    prev = acc;
  }
  g_string_append_printf(j,
                         "], \"edges\": [%s]}], \"transitions\": [], "
                         "\"next_id\": %u}\n",
                         e->str, id);
  g_string_free(e, TRUE);
  return g_string_free(j, FALSE);
}

#endif
