/* weir.c — the `weir` command-line program.
 *
 * A thin client of libweir: every subcommand parses its options, calls the
 * library and prints the result.  Errors from the library arrive as GErrors
 * and are printed, once, with a non-zero exit status.  This file holds main
 * and the command table; the commands live in the files of their group
 * (cli.h lists them), which share cli-util.c.
 *
 *   weir import MODEL.onnx -o OUT.json [-D SYM=VALUE]...
 *                                           ONNX model -> Weir program
 *   weir info FILE [-D SYM=VALUE]...        data-movement summary
 *   weir validate FILE                      validate, report every problem
 *   weir expand FILE [--op TYPE] -o OUT.json
 *                                           expand library nodes
 *   weir run-ref FILE [--input NAME=FILE]... [--expect NAME=FILE]...
 *                [--output NAME=FILE]... [-D SYM=VALUE]... [--seed N]
 *                                           run the reference interpreter
 *   weir conformance [--expected-unsupported FILE]
 *                    [--backend interp|compiled] DIR...
 *                                           run ONNX node tests
 *   weir ops                                the operators Weir knows
 *   weir transforms FILE [--tier N] [--node NAME]
 *                                           transformations that apply,
 *                                           their sites, legal or why not
 *   weir apply FILE NAME [--site SITE] [--param K=V]... -o OUT.json
 *                                           apply one transformation and
 *                                           print the data-movement change
 *   weir codegen FILE [-o DIR]              write <prefix>.c and <prefix>.h
 *   weir run FILE [--input NAME=FILE]... [--expect NAME=FILE]...
 *            [--output NAME=FILE]... [--check] [-D SYM=VALUE]... [--seed N]
 *            [--cc CC] [--cflags FLAGS]     compile (through the compile
 *                                           cache) and run; --check also
 *                                           runs the interpreter and compares
 *   weir bench FILE [-D ...] [--threads N] [--reps N] [--warmup N]
 *                                           cold and cached compile time,
 *                                           run time, GFLOP/s and GB/s
 *   weir cache stats|clear                  the compile cache
 *   weir hw [--remeasure] [--json]          the hardware profile (ISA,
 *                                           caches, measured peak FLOP/s
 *                                           and bandwidth), cached
 *   weir tune FILE [-O N] [--budget S] [--threads N] [--reps N] [--db PATH]
 *                                           time the candidate
 *                                           implementations of each native
 *                                           node, store the winners in the
 *                                           tuning database (-O3 uses it)
 *   weir train MODEL.onnx --data FILE [--label COL] [--epochs N] [--batch B]
 *              [--optimizer sgd|momentum|adam] [--lr LR] [--seed S]
 *              [--threads T] [--steps-per-call K] [--val-fraction F]
 *              [--scale S] [--standardize] [--recipe R.json]
 *              [--loss mse [--target-columns COLS | --targets N |
 *               --target-file FILE]] [--params RE] [--freeze RE]
 *              -o TRAINED.onnx
 *                                           compiled training with progress,
 *                                           held-out accuracy per epoch and
 *                                           the trained model written back
 *   weir train-graph MODEL --loss L [--target NAME] [--output NAME]
 *            --optimizer O [--lr X] [--momentum X] [--weight-decay X]
 *            [--steps K] [--params REGEX] [--freeze REGEX]
 *            [--lr-schedule S] [--warmup-steps N] [--total-steps N]
 *            [--lr-step-size N] [--lr-gamma G] [--clip-grad-norm X]
 *            [--accumulate K] [--per-tensor-update] -o TRAIN.json|TRAIN.weir
 *                                           derive the training program
 *
 * Workspaces (*.weir: a model and its history; docs/sessions.md):
 *   weir new MODEL -o WS.weir [--force]     start a workspace (alias: open)
 *   weir apply WS.weir NAME [--site SITE] [--param K=V]...
 *                                           a new step in the history
 *   weir undo WS.weir | weir redo WS.weir | weir goto WS.weir K|BOOKMARK
 *   weir history WS.weir [--export-recipe R.json]
 *   weir bookmark WS.weir NAME [--step K]
 *   weir optimize MODEL --recipe R.json [-o OUT.weir|OUT.json] [--report]
 * Every command that changes a workspace saves it and prints the
 * data-movement summary of its current program.
 *
 * FILE is a Weir program (.json), an ONNX model (.onnx), imported on the
 * fly, or a workspace (.weir): its current program.  Random inputs are the
 * same in run-ref, run and bench for the same seed (each argument container
 * is filled with seed + its id).
 * `transforms`, `apply` and `optimize` also load the plugins found on
 * WEIR_PLUGIN_PATH and in $XDG_DATA_HOME/weir/plugins; refused plugins are
 * reported as warnings.
 */
#include <locale.h>
#include <string.h>

#include "cli.h"

typedef struct {
  const char *name;
  const char *args;
  const char *summary;
  CliCommandFunc run;
} Command;

static const Command commands[] = {
    {"import", "MODEL.onnx -o OUT.json [-D SYM=VALUE]...",
     "import an ONNX model as a Weir program", cli_cmd_import},
    {"info", "FILE [--count MODE] [-D SYM=VALUE]...",
     "print containers, data movement, FLOPs and peak memory", cli_cmd_info},
    {"validate", "FILE", "check a program and report every problem",
     cli_cmd_validate},
    {"expand", "FILE [--op TYPE] -o OUT.json",
     "expand library nodes into maps and tasklets", cli_cmd_expand},
    {"run-ref", "FILE [--input N=F]... [--expect N=F]...",
     "run the reference interpreter, compare outputs", cli_cmd_run_ref},
    {"conformance",
     "[--expected-unsupported FILE] [--backend interp|compiled] DIR...",
     "run ONNX backend node tests through Weir", cli_cmd_conformance},
    {"ops", "", "list the operators Weir knows, with their attributes",
     cli_cmd_ops},
    {"transforms", "FILE [--tier N] [--node NAME]",
     "list applicable transformations and their sites", cli_cmd_transforms},
    {"apply", "FILE NAME [--site N,..] [-p K=V].. -o OUT",
     "apply a transformation and report the data-movement change",
     cli_cmd_apply},
    {"codegen", "FILE [-o DIR]", "write the generated C source and header",
     cli_cmd_codegen},
    {"run", "FILE [--input N=F]... [--check]",
     "compile and run; compare outputs or with the interpreter", cli_cmd_run},
    {"bench", "FILE [-D ...] [--threads N] [--reps N]",
     "time compiling and running a program", cli_cmd_bench},
    {"profile", "MODEL [--threads N] [--format text|csv|json] [--plot R.svg]",
     "time per node (instrumented build) with FLOPs, bytes and roofline",
     cli_cmd_profile},
    {"cache", "stats|clear", "show or empty the compile cache", cli_cmd_cache},
    {"hw", "[--remeasure] [--json]",
     "the hardware profile: ISA, cores, caches, measured peak and bandwidth",
     cli_cmd_hw},
    {"tune", "FILE [-O N] [--budget S] [--threads N]",
     "time the implementations of each native node; store the winners for "
     "-O3",
     cli_cmd_tune},
    {"new", "MODEL -o WS.weir [-D SYM=VALUE]...",
     "start a workspace from a model (alias: open)", cli_cmd_new},
    {"open", "MODEL -o WS.weir", "same as new", cli_cmd_new},
    {"apply", "WS.weir NAME [--site SITE] [-p K=V]..",
     "apply in a workspace: a new history step", cli_cmd_apply},
    {"undo", "WS.weir", "go back one step", cli_cmd_undo},
    {"redo", "WS.weir", "go forward one step", cli_cmd_redo},
    {"goto", "WS.weir K|BOOKMARK", "make step K (0: the model) current",
     cli_cmd_goto},
    {"history", "WS.weir [--export-recipe R.json]",
     "list the steps; export them as a recipe", cli_cmd_history},
    {"bookmark", "WS.weir NAME [--step K]", "name the current step (or K)",
     cli_cmd_bookmark},
    {"optimize", "MODEL --recipe R.json [-o OUT] [--report]",
     "apply a recipe to a model", cli_cmd_optimize},
    {"export", "WS.weir|FILE -o DIR [--input N=F]...",
     "write a standalone kernel: C, Makefile, harness, README", cli_cmd_export},

    {"train", "MODEL.onnx --data FILE -o OUT.onnx [...]",
     "train a model on a data set with compiled training", cli_cmd_train},
    {"train-graph", "MODEL --loss L --optimizer O [...] -o OUT",
     "derive the training program (forward, loss, backward, update)",
     cli_cmd_train_graph},
    {"prune", "MODEL --sparsity S [--structured channels] -o OUT",
     "magnitude pruning of the weights (transformation prune)", cli_cmd_prune},
    {"quantize", "MODEL --calibrate DATA | --precision bf16 -o OUT",
     "Conv/Gemm/MatMul into int8 (calibrated on samples) or bf16",
     cli_cmd_quantize},
};

static void usage(FILE *out) {
  fprintf(out, "usage: weir COMMAND [ARGS...]\n\nCommands:\n");
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-11s %-42s %s\n", commands[i].name, commands[i].args,
            commands[i].summary);
  fprintf(out, "\n'weir COMMAND --help' describes the options of a "
               "command; 'weir --version' prints the version.\n");
}

int main(int argc, char **argv) {
  setlocale(LC_ALL, "");
  weir_init();
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0 ||
      strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("weir %s\n", weir_version());
    return 0;
  }
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++) {
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "weir: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
