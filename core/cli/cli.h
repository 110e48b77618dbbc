/* cli.h — what the commands of the `weir` program share (core/cli/).
 *
 * The program is a thin client of libweir.  weir.c holds main and the
 * command table; every command is one function cli_cmd_<name>() in the
 * file of its group (cli-ir.c, cli-transform.c, cli-session.c, cli-run.c,
 * cli-export.c, cli-cache.c, cli-conformance.c, cli-train.c).  A command
 * declares its options in one GOptionEntry table local to it (the shared
 * groups below are entry macros bound to the command's own variables),
 * parses them with cli_parse_options, calls the library, prints the
 * result, and returns the exit status: 0, 1 (the work failed) or 2 (bad
 * usage).  Problems go to stderr once, as "weir COMMAND: message".
 *
 * Strings returned by the cli_format_* functions are owned by the caller
 * (g_free); everything else passed in is borrowed unless said otherwise.
 */
#ifndef WEIR_CLI_H
#define WEIR_CLI_H

#include <stdio.h>

#include "weir.h"

G_BEGIN_DECLS

/* ------------------------------------------------------------- commands */

typedef int (*CliCommandFunc)(int argc, char **argv);

int cli_cmd_import(int argc, char **argv);      /* cli-ir.c */
int cli_cmd_info(int argc, char **argv);        /* cli-ir.c */
int cli_cmd_validate(int argc, char **argv);    /* cli-ir.c */
int cli_cmd_ops(int argc, char **argv);         /* cli-ir.c */
int cli_cmd_expand(int argc, char **argv);      /* cli-transform.c */
int cli_cmd_transforms(int argc, char **argv);  /* cli-transform.c */
int cli_cmd_apply(int argc, char **argv);       /* cli-transform.c */
int cli_cmd_optimize(int argc, char **argv);    /* cli-transform.c */
int cli_cmd_new(int argc, char **argv);         /* cli-session.c */
int cli_cmd_undo(int argc, char **argv);        /* cli-session.c */
int cli_cmd_redo(int argc, char **argv);        /* cli-session.c */
int cli_cmd_goto(int argc, char **argv);        /* cli-session.c */
int cli_cmd_history(int argc, char **argv);     /* cli-session.c */
int cli_cmd_bookmark(int argc, char **argv);    /* cli-session.c */
int cli_cmd_run_ref(int argc, char **argv);     /* cli-run.c */
int cli_cmd_run(int argc, char **argv);         /* cli-run.c */
int cli_cmd_bench(int argc, char **argv);       /* cli-run.c */
int cli_cmd_codegen(int argc, char **argv);     /* cli-export.c */
int cli_cmd_export(int argc, char **argv);      /* cli-export.c */
int cli_cmd_cache(int argc, char **argv);       /* cli-cache.c */
int cli_cmd_hw(int argc, char **argv);          /* cli-hw.c */
int cli_cmd_tune(int argc, char **argv);        /* cli-tune.c */
int cli_cmd_profile(int argc, char **argv);     /* cli-profile.c */
int cli_cmd_conformance(int argc, char **argv); /* cli-conformance.c */
int cli_cmd_train(int argc, char **argv);       /* cli-train.c */
int cli_cmd_train_graph(int argc, char **argv); /* cli-train.c */
int cli_cmd_prune(int argc, char **argv);       /* cli-prune.c */
int cli_cmd_quantize(int argc, char **argv);    /* cli-quantize.c */

/* -------------------------------------------------------------- options
 *
 * Shared option groups, as entries to put in a command's table.  Every
 * command's table starts with CLI_DEFINE_ENTRY (-D is accepted
 * everywhere).  The variables are the command's (free them: GStrv and
 * strings are allocated by GOption). */

#define CLI_DEFINE_ENTRY(defines)                                              \
  {                                                                            \
    "define", 'D', 0, G_OPTION_ARG_STRING_ARRAY, (defines),                    \
        "Bind a symbol to a value", "SYM=VALUE"                                \
  }

/* --impl OP=IMPL: the implementation of every library node of OP (the node
 * attribute "impl", see core/weir-native.h); cli_load_program applies it. */
#define CLI_IMPL_ENTRY(impls)                                                  \
  {                                                                            \
    "impl", 0, 0, G_OPTION_ARG_STRING_ARRAY, (impls),                          \
        "Implementation of every node of OP: pure, blas, weir, im2col, "       \
        "direct, depthwise "                                                   \
        "(repeatable)",                                                        \
        "OP=IMPL"                                                              \
  }

/* -O N / --opt-level N: the optimization level (weir-pipeline.h);
 * cli_parse_options also reads -O0 .. -O3 for a command that has this
 * entry.  The text is read with cli_opt_level. */
#define CLI_OPT_LEVEL_ENTRY(text)                                              \
  {                                                                            \
    "opt-level", 'O', 0, G_OPTION_ARG_STRING, (text),                          \
        "Optimization level 0-3 (-O0: as imported; default -O2; "              \
        "`weir optimize --print-pipeline -ON` shows its recipe)",              \
        "N"                                                                    \
  }

/* The level given as text; when none is given, WEIR_OPT_LEVEL_DEFAULT for
 * a program file (JSON, ONNX) and 0 for a workspace (file may be NULL),
 * whose program is what its history made of it.  FALSE after printing when
 * the text does not parse. */
gboolean cli_opt_level(const char *cmd, const char *text, const char *file,
                       guint *level);

/* Applies the pipeline of level to g (loading the transformations and
 * plugins first); *applied (may be NULL) receives the number of
 * applications.  FALSE after printing. */
gboolean cli_optimize(const char *cmd, const char *file, WeirGraph *g,
                      guint level, GHashTable *bindings, guint *applied);

/* Compiler, flags and compile cache (cli_compile_options). */
typedef struct {
  char *cc, *cflags, *cache_dir;
  gboolean no_cache;
} CliCompile;

void cli_compile_clear(CliCompile *c);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(CliCompile, cli_compile_clear)
WeirCompileOptions cli_compile_options(const CliCompile *c);

#define CLI_CACHE_DIR_ENTRY(dir)                                               \
  {                                                                            \
    "cache-dir", 0, 0, G_OPTION_ARG_FILENAME, (dir),                           \
        "Compile cache directory (default: $WEIR_CACHE_DIR or "                \
        "$XDG_CACHE_HOME/weir)",                                               \
        "DIR"                                                                  \
  }

#define CLI_NO_CACHE_ENTRY(c)                                                  \
  {                                                                            \
    "no-cache", 0, 0, G_OPTION_ARG_NONE, &(c)->no_cache,                       \
        "Compile without the cache", NULL                                      \
  }

/* --impl, --cc, --cflags, --cache-dir, --no-cache */
#define CLI_COMPILE_ENTRIES(impls, c)                                          \
  CLI_IMPL_ENTRY(impls), {"cc",     0,                                         \
                          0,        G_OPTION_ARG_STRING,                       \
                          &(c)->cc, "C compiler (default: $CC or cc)",         \
                          "CC"},                                               \
      {"cflags",                                                               \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(c)->cflags,                                                           \
       "Compiler flags (default: " WEIR_COMPILE_DEFAULT_FLAGS ")",             \
       "FLAGS"},                                                               \
      CLI_CACHE_DIR_ENTRY(&(c)->cache_dir), CLI_NO_CACHE_ENTRY(c)

/* Tensors of a run: --seed, --input, --expect, --output, --rtol, --atol
 * (run-ref, run, bench, export). */
typedef struct {
  gint64 seed;
  char **inputs;     /* NAME=FILE */
  char **expects;    /* NAME=FILE */
  char **outputs;    /* NAME=FILE */
  double rtol, atol; /* < 0: the defaults */
  char *max_memory;  /* --max-memory SIZE, or NULL */
} CliTensors;

#define CLI_TENSORS_INIT                                                       \
  { .seed = 1, .rtol = -1, .atol = -1 }
void cli_tensors_clear(CliTensors *t);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(CliTensors, cli_tensors_clear)

/* --seed, --input, --expect, --output, --rtol, --atol (run-ref, run) */
#define CLI_TENSOR_ENTRIES(io)                                                 \
  {"seed",      0,                                                             \
   0,           G_OPTION_ARG_INT64,                                            \
   &(io)->seed, "Seed of the random inputs (default 1)",                       \
   "N"},                                                                       \
      {"input",                                                                \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING_ARRAY,                                              \
       &(io)->inputs,                                                          \
       "Read an argument from a tensor file (.pb or .npy)",                    \
       "NAME=FILE"},                                                           \
      {"expect",                                                               \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING_ARRAY,                                              \
       &(io)->expects,                                                         \
       "Compare an argument after the run with a tensor file",                 \
       "NAME=FILE"},                                                           \
      {"output",                                                               \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING_ARRAY,                                              \
       &(io)->outputs,                                                         \
       "Write an argument after the run to a tensor file",                     \
       "NAME=FILE"},                                                           \
      {"rtol",                                                                 \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(io)->rtol,                                                            \
       "Relative tolerance of --expect (default 1e-4; integers exact)",        \
       "R"},                                                                   \
  {                                                                            \
    "atol", 0, 0, G_OPTION_ARG_DOUBLE, &(io)->atol,                            \
        "Absolute tolerance of --expect (default 1e-5)", "A"                   \
  }

/* --max-memory SIZE (run, run-ref, bench, train): see weir-limits.h. */
#define CLI_MAX_MEMORY_ENTRY(text)                                             \
  {                                                                            \
    "max-memory", 0, 0, G_OPTION_ARG_STRING, (text),                           \
        "Refuse to run when the program needs more memory than SIZE "          \
        "(e.g. 512M, 8G; default: the physical memory)",                       \
        "SIZE"                                                                 \
  }

/* The --max-memory limit in bytes (0: the physical memory; text may be
 * NULL); FALSE after printing when it does not parse. */
gboolean cli_max_memory_limit(const char *cmd, const char *text,
                              guint64 *limit);

/* Parses the options of cmd (entries: its table, NULL-terminated); leaves
 * the positional arguments in argv.  FALSE after printing on bad usage. */
gboolean cli_parse_options(const char *cmd, const char *usage,
                           const GOptionEntry *entries, int *argc,
                           char ***argv);

/* The -D values as bindings (weir_bindings_new; transfer full), or NULL
 * with an error naming the bad one. */
GHashTable *cli_parse_defines(char **defines, GError **error);

/* Splits "NAME=FILE" (option: "input", ...); FALSE after printing. */
gboolean cli_split_spec(const char *cmd, const char *option, const char *spec,
                        char **name, char **file);

/* ---------------------------------------------------------------- errors */

void cli_print_error(const char *cmd, const GError *error);

/* A compile error; generated sources live in a temporary directory, so it
 * says how to get them. */
void cli_print_compile_error(const char *cmd, const char *file,
                             const GError *error);

/* ------------------------------------------------------------ programs */

gboolean cli_is_workspace_path(const char *path);

/* Opens a workspace (.weir); NULL after printing. */
WeirSession *cli_open_workspace(const char *cmd, const char *path);

/* Saves s to path; FALSE after printing. */
gboolean cli_save_workspace(const char *cmd, const WeirSession *s,
                            const char *path);

/* Applies the --impl choices to g; FALSE after printing. */
gboolean cli_apply_impls(const char *cmd, char **impls, WeirGraph *g);

/* Loads a program: JSON, an ONNX model imported with opts (may be NULL), or
 * the current program of a workspace, and applies the --impl choices
 * (impls may be NULL).  Reports errors and import warnings; NULL after
 * printing. (transfer full) */
WeirGraph *cli_load_program(const char *cmd, const char *path,
                            WeirOnnxImportOptions *opts, char **impls);

/* Registers the built-in transformations and loads the plugins, printing
 * the refused ones as warnings. */
void cli_load_transformations(const char *cmd);

guint cli_count_library_nodes(const WeirGraph *g);

/* The library nodes of g that apply-tuning gave a tuned choice (attribute
 * "tuned"), in state and node order: a table "node, op, impl, params,
 * signature" under a heading (nothing when there is none). */
void cli_print_tuned_nodes(const WeirGraph *g);
/* "3 nodes (weir 2, im2col 1)" for the tuned library nodes of g, or NULL
 * when there is none. (transfer full) */
char *cli_tuned_summary(const WeirGraph *g);

/* The argument container called name: by container name, by the ONNX name
 * the importer recorded (names, may be NULL), or by the label of one of
 * its access nodes; NULL after printing the argument names ("--option
 * NAME: no argument of that name"). */
const WeirContainer *cli_require_argument(const char *cmd, const WeirGraph *g,
                                          GHashTable *names, const char *option,
                                          const char *name);

/* ------------------------------------------------------------ formatting */

/* "512 B", "8.0 KiB", "1.1 MiB" (IEC units, plain ASCII spaces). */
char *cli_format_bytes(gint64 b);
/* A quantity: the number when known (bytes formatted as sizes), else the
 * symbolic expression. */
char *cli_format_quantity(const WeirQuantity *q, gboolean bytes);
/* "12.3 us", "4.567 ms", "1.234 s" */
char *cli_format_seconds(double s);
/* "12.0 KiB -> 9.0 KiB (-25.0%)" */
char *cli_format_change(const WeirFigure *a, const WeirFigure *b,
                        gboolean bytes);
/* "[N, 3, 32, 32]" */
char *cli_shape_text(const WeirContainer *c);

/* A simple left-aligned text table, printed (and freed) at once. */
typedef struct CliTable CliTable;
CliTable *cli_table_new(guint ncols);
/* Adds one row of ncols cells (char *, transfer full). */
void cli_table_row(CliTable *t, ...);
/* Prints the table, indented by two spaces, and frees it. */
void cli_table_print(CliTable *t);

/* The data-movement summary of a workspace printed after every change
 * (cli-session.c). */
void cli_print_workspace_summary(const char *path, const WeirSession *s);

G_END_DECLS

#endif
