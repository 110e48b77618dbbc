/* tier3-util.h — helpers shared by the tier-3 (inter-operator fusion)
 * transformations.
 *
 * Only the public IR API is used.  Conventions of this directory:
 *  - "A" is the first map (the producer, or the one with the smaller entry
 *    id), "B" the second; "T" the container between them.
 *  - Legality checks never change the graph and return a reason text
 *    (transfer full) when a site is not legal; apply functions may assume
 *    the check passed and may leave the graph half changed on error (the
 *    framework restores it).
 *  - Every iteration is in id order, so results are deterministic.
 */
#ifndef WEIR_TIER3_UTIL_H
#define WEIR_TIER3_UTIL_H

#include "weir-graph.h"
#include "weir-plugin.h"

G_BEGIN_DECLS

/* -------------------------------------------------------------- queries */

/* The memlets entering / leaving node `id` (on connector conn, or on any
 * connector when conn is NULL), by id.  Free with g_ptr_array_unref;
 * elements are borrowed. */
GPtrArray *tier3_edges_in(const WeirState *s, guint id, const char *conn);
GPtrArray *tier3_edges_out(const WeirState *s, guint id, const char *conn);

/* TRUE when node is inside the scope of map entry `entry` (at any depth;
 * the entry and its own exit are not inside). */
gboolean tier3_in_scope(const WeirScopes *sc, guint entry, guint node);

/* Ids of the nodes inside the scope of `entry`, ascending. */
GArray *tier3_scope_body(const WeirState *s, const WeirScopes *sc, guint entry);

/* Set of the node ids reachable from `start` by following memlets
 * (start itself only through a cycle), not crossing the memlets whose ids
 * are in `blocked` (a set made with g_direct_hash, may be NULL). */
GHashTable *tier3_reachable(const WeirState *s, guint start,
                            GHashTable *blocked);

/* TRUE when a memlet names `data` or an access node reads it anywhere in
 * the program (nested programs have their own names and are not
 * looked at). */
gboolean tier3_container_used(const WeirGraph *g, const char *data);

/* The connector name that pairs with conn on a map node: "OUT_x" for
 * "IN_x" and back (transfer full), or NULL when conn has neither prefix. */
char *tier3_pair_conn(const char *conn);

/* A suffix x such that neither IN_x nor OUT_x is a connector of n, derived
 * from base ("x", "x_1", "x_2", ...).  (transfer full) */
char *tier3_fresh_conn_suffix(const WeirNode *n, const char *base);

/* Names of the containers a map scope reads (memlets entering its entry)
 * and writes (memlets leaving its exit), sorted, no duplicates.  Owned
 * strings. */
GPtrArray *tier3_map_reads(const WeirState *s, const WeirNode *entry);
GPtrArray *tier3_map_writes(const WeirState *s, const WeirNode *exit);

/* TRUE when the sorted name array contains name. */
gboolean tier3_names_contain(GPtrArray *names, const char *name);

/* "T[i, j]" (transfer full). */
char *tier3_subset_text(const char *data, const WeirSubset *sub);

/* The smallest box holding a and b (step 1 unless both steps are equal and
 * the boxes are too).  (transfer full) */
WeirSubset *tier3_subset_union(const WeirSubset *a, const WeirSubset *b);

/* -------------------------------------------------------- parameters */

/* Pairs the parameters of map a with those of map b so that the ranges are
 * equal: first by the hints (where hint_a and hint_b, subsets on the same
 * container, have a lone parameter in the same dimension), then in order.
 * With allow_extra, b may have parameters without a counterpart in a.
 * Returns a table a-parameter -> b-parameter (owned strings), or NULL
 * with *reason ("different ranges: ...").  Hints may be NULL. */
GHashTable *tier3_pair_params(const WeirMap *a, const WeirMap *b,
                              const WeirSubset *hint_a,
                              const WeirSubset *hint_b, gboolean allow_extra,
                              char **reason);

/* The table of tier3_pair_params as a substitution (name -> WeirExpr*
 * symbol), owned values; for weir_subset_substitute. */
GHashTable *tier3_param_substitution(GHashTable *pairs);

/* Substitution (name -> WeirExpr*, owned) of every parameter of map whose
 * range holds a single point by that point: T[i] and T[0] are the same
 * element when i ranges over 0:1. */
GHashTable *tier3_point_substitution(const WeirMap *map);

/* Reason (transfer full) when a map nested in the scope of `entry` has a
 * parameter named like one of `names` (char*), which would shadow it after
 * a merge; NULL otherwise. */
char *tier3_check_nested_params(const WeirState *s, const WeirScopes *sc,
                                guint entry, GPtrArray *names);

/* Reason (transfer full) when renaming the parameters of the scope of
 * `entry` by pairs (old -> new name) would capture a name: a tasklet inside
 * reads a renamed parameter and has a connector or local with the new
 * name.  NULL otherwise. */
char *tier3_check_rename_capture(const WeirState *s, const WeirScopes *sc,
                                 guint entry, GHashTable *pairs);

/* ------------------------------------------------------------- code */

typedef enum {
  TIER3_NAME_LOCAL,
  TIER3_NAME_INPUT,
  TIER3_NAME_OUTPUT,
  TIER3_NAME_SYMBOL,
} Tier3NameRole;

/* Returns the new name for a name of the given role (borrowed or static),
 * or NULL to keep it. */
typedef const char *(*Tier3RenameFunc)(const char *name, Tier3NameRole role,
                                       gpointer user);

/* Renames names in code (in place), resolving each as the checker does:
 * a local assigned earlier, an input connector of `tasklet`, an output
 * connector (assignment targets), else a symbol. */
void tier3_code_rename(WeirCode *code, const WeirNode *tasklet,
                       Tier3RenameFunc rename, gpointer user);

/* The role of each statement's target (TIER3_NAME_LOCAL or
 * TIER3_NAME_OUTPUT), resolved as in tier3_code_rename.  A GArray of
 * Tier3NameRole, one per statement. */
GArray *tier3_code_target_roles(const WeirCode *code, const WeirNode *tasklet);

/* Every name appearing in code, added to set (owned keys, g_str_hash). */
void tier3_code_names(const WeirCode *code, GHashTable *set);

/* ---------------------------------------------------------- editing */

/* Substitutes the parameters in map (name -> WeirExpr*) inside the scope
 * of `entry`: subsets and volumes of the memlets leaving the entry, entering
 * its exit and joining nodes of the body, ranges of nested maps, symbol
 * bindings of nested programs and the symbols of tasklet bodies. */
gboolean tier3_substitute_scope(WeirGraph *g, WeirState *s,
                                const WeirScopes *sc, guint entry,
                                GHashTable *map, GError **error);

/* Moves the body of map scope src (entry) into map scope dst: memlets of
 * src's entry and exit are re-created on dst's entry and exit (inputs from
 * the same node and container share one connector, the outer memlet then
 * covering both; otherwise fresh connectors), then src's entry and exit
 * are removed.  The caller has renamed src's parameters to dst's and
 * checked legality.  Outer volumes of moved inputs are recomputed for dst's
 * iteration count when it differs. */
gboolean tier3_merge_scope(WeirGraph *g, WeirState *s, WeirNode *src_entry,
                           WeirNode *dst_entry, GError **error);

/* Number of iterations of a map: product of its range sizes. (transfer
 * full) */
WeirExpr *tier3_map_size(const WeirMap *map);

/* qsort-style comparison of two guint. */
gint tier3_cmp_uint(gconstpointer a, gconstpointer b);

/* Appends a site to sites. */
void tier3_site_add(GArray *sites, guint state, guint n, const guint *nodes);

/* Set error / reason helpers: both printf-style, return FALSE. */
gboolean tier3_reason(char **reason, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

G_END_DECLS

#endif
