/* test-flops-models.c — FLOP counts of every sample model against hand
 * counts, forward and one training step (docs/analysis.md).
 *
 * For each model of samples/models: the imported forward program (as is:
 * library nodes counted by their operator's rule), and the training
 * program of weir_train_graph (one step, K = 1, SGD; softmax cross-entropy
 * for the classifiers, mse for the regression model and the transformer)
 * counted as compiled (weir_native_expand_rest: native library nodes kept,
 * the rest expanded: what `weir bench` counts) and with every library node
 * expanded (weir_expand_all: what `weir info --count expanded` counts).
 * The step must be 2x to 4x its forward pass both ways.
 *
 * Conventions of the hand counts (the operator rules of ir/ops/):
 *   Gemm(B, K, N) with bias: 2 B K N multiply-adds + B N bias adds;
 *   MatMul: 2 x output elements x K;  Conv (no bias add counted):
 *   2 x output elements x C x KH x KW;  ConvGradInput / ConvGradFilter:
 *   the same figure as the forward convolution;  MaxPool k x k: k x k
 *   comparisons per output;  MaxPoolGrad: k x k comparisons + 1 add per
 *   output gradient;  Relu and its gradient: 1 per element.
 * A training step (SGD) adds to the forward pass:
 *   loss, softmax cross-entropy over B x C logits: max B C, exp-sum 3 B C,
 *   normalize 3 B C, negative log-likelihood B C, its sum B C, mean B + 1
 *   = 9 B C + B + 1;  its gradient 3 B C;
 *   loss, mse over B x O outputs: 3 B O + B + 1;  its gradient 3 B O;
 *   per Gemm layer: dX 2 B K N (not for the first layer: the input needs
 *   no gradient), dW 2 B K N, db B N;
 *   per Conv layer: dX (not for the first), dW, db (1 per output element);
 *   the finiteness check (one SumAll over the loss and the gradients): 1
 *   per parameter value + 1 for the loss;  the update (one
 *   OptimizerUpdate): 2 per parameter value + 1 (the test of the check);
 *   the step counter: 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "weir.h"

typedef struct {
  gint64 forward;  /* as is */
  gint64 compiled; /* training step, as compiled */
  gint64 expanded; /* training step, every library node expanded */
  gint64 forward_expanded;
  gint64 contractions; /* training step as compiled: the FLOPs of its
                          Conv/Gemm/MatMul nodes and their gradients */
} Counts;

static gint64 total(const WeirGraph *g, GHashTable *bindings) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, &error);
  assert_null(error);
  assert_non_null(a);
  assert_true(a->total_flops.known);
  return a->total_flops.value;
}

static gint64 contractions(const WeirGraph *g, GHashTable *bindings) {
  static const char *const ops[] = {"Conv", "ConvGradInput", "ConvGradFilter",
                                    "Gemm", "MatMul",        NULL};
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, &error);
  assert_non_null(a);
  gint64 sum = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, j);
      if (n->kind != WEIR_NODE_LIBRARY ||
          !g_strv_contains(ops, n->op ? n->op : ""))
        continue;
      const WeirNodeCost *nc = weir_analysis_node(a, n->id);
      assert_true(nc->flops.known);
      sum += nc->flops.value;
    }
  }
  return sum;
}

static Counts count(const char *model, gint64 batch, WeirLoss loss) {
  g_autofree char *path =
      g_strdup_printf("%s/samples/models/%s.onnx", WEIR_SRCDIR, model);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) fwd = weir_onnx_import(path, NULL, &error);
  assert_null(error);
  assert_non_null(fwd);
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "batch", batch);
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = loss;
  o.optimizer = WEIR_OPTIMIZER_SGD;
  o.steps = 1;
  g_autoptr(WeirGraph) train = weir_train_graph(fwd, &o, &error);
  assert_null(error);
  assert_non_null(train);
  Counts c = {0};
  c.forward = total(fwd, bindings);
  g_autoptr(WeirGraph) compiled = weir_graph_copy(train);
  assert_true(weir_native_expand_rest(compiled, &error));
  c.compiled = total(compiled, bindings);
  c.contractions = contractions(compiled, bindings);
  g_autoptr(WeirGraph) expanded = weir_graph_copy(train);
  assert_true(weir_expand_all(expanded, NULL, NULL, &error));
  c.expanded = total(expanded, bindings);
  g_autoptr(WeirGraph) fx = weir_graph_copy(fwd);
  assert_true(weir_expand_all(fx, NULL, NULL, &error));
  c.forward_expanded = total(fx, bindings);
  /* the step is 2x to 4x its forward pass, as compiled and expanded */
  if (c.compiled < 2 * c.forward || c.compiled > 4 * c.forward ||
      c.expanded < 2 * c.forward_expanded ||
      c.expanded > 4 * c.forward_expanded)
    fail_msg("%s: step %" G_GINT64_FORMAT " (expanded %" G_GINT64_FORMAT
             ") vs forward %" G_GINT64_FORMAT " (expanded %" G_GINT64_FORMAT
             ")",
             model, c.compiled, c.expanded, c.forward, c.forward_expanded);
  return c;
}

static gint64 gemm(gint64 b, gint64 k, gint64 n) {
  return 2 * b * k * n + b * n;
}

/* The step's additions for a softmax cross-entropy loss over b x c and SGD
 * over p parameter values in t tensors: SoftmaxCrossEntropyLoss (mean, no
 * weights) 6 bc (its LogSoftmax, which stays a library node run by Weir's
 * row kernel: the operator's count, ir/ops/reduce.c; its pure expansion's
 * maps count 7 bc) + 4 b + 1 (ir/ops/losses.c), its gradient
 * NegativeLogLikelihoodLossGrad with softmax 5 bc + b (the weight sum of
 * the mean), the check p + 1, the update 2 p + 1, the counter 1 (the
 * number of tensors no longer counts: one node each over all of them). */
static gint64 ce_sgd(gint64 b, gint64 c, gint64 p) {
  return (6 * b * c + 4 * b + 1) + (5 * b * c + b) + (p + 1) + (2 * p + 1) + 1;
}

/* mlp, batch 4: Gemm 64->128, Relu, Gemm 128->64, Relu, Gemm 64->10.
 *   forward: gemm(4,64,128) 66048 + 512 + gemm(4,128,64) 65792 + 256
 *            + gemm(4,64,10) 5160 = 137768
 *   backward: fc3 dX 5120 dW 5120 db 40, Relu_1 256, fc2 dX 65536
 *             dW 65536 db 256, Relu 512, fc1 dW 65536 db 512
 *   parameters 64*128+128 + 128*64+64 + 64*10+10 = 17226 in 6 tensors */
static void test_mlp(void **state) {
  (void)state;
  Counts c = count("mlp", 4, WEIR_LOSS_SOFTMAX_CROSS_ENTROPY);
  gint64 f = gemm(4, 64, 128) + 512 + gemm(4, 128, 64) + 256 + gemm(4, 64, 10);
  assert_int_equal(f, 137768);
  assert_int_equal(c.forward, f);
  gint64 back =
      5120 + 5120 + 40 + 256 + 65536 + 65536 + 256 + 512 + 65536 + 512;
  assert_int_equal(c.compiled, f + back + ce_sgd(4, 10, 17226));
}

/* digits_mlp, batch 4: Gemm 64->64, Relu, Gemm 64->10.
 *   forward: gemm(4,64,64) 33024 + 256 + gemm(4,64,10) 5160 = 38440
 *   backward: fc2 dX 5120 dW 5120 db 40, Relu 256, fc1 dW 32768 db 256
 *   parameters 64*64+64 + 64*10+10 = 4810 in 4 tensors */
static void test_digits_mlp(void **state) {
  (void)state;
  Counts c = count("digits_mlp", 4, WEIR_LOSS_SOFTMAX_CROSS_ENTROPY);
  gint64 f = gemm(4, 64, 64) + 256 + gemm(4, 64, 10);
  assert_int_equal(f, 38440);
  assert_int_equal(c.forward, f);
  gint64 back = 5120 + 5120 + 40 + 256 + 32768 + 256;
  assert_int_equal(c.compiled, f + back + ce_sgd(4, 10, 4810));
}

/* diabetes_mlp, batch 4, mse: Gemm 10->16, Relu, Gemm 16->1.
 *   forward: gemm(4,10,16) 1344 + 64 + gemm(4,16,1) 132 = 1540
 *   loss 3*4 + 4 + 1 = 17, its gradient 20 (differentiated: ReduceMean's
 *   division 4, the Pointwise derivative dY * 2 (a - b) 4 per element)
 *   backward: fc2 dX 128 dW 128 db 4, Relu 64, fc1 dW 1280 db 64
 *   parameters 10*16+16 + 16+1 = 193 in 4 tensors: check 193 + 1,
 *   update 2 * 193 + 1, counter 1 */
static void test_diabetes_mlp(void **state) {
  (void)state;
  Counts c = count("diabetes_mlp", 4, WEIR_LOSS_MSE);
  gint64 f = gemm(4, 10, 16) + 64 + gemm(4, 16, 1);
  assert_int_equal(f, 1540);
  assert_int_equal(c.forward, f);
  gint64 back = 128 + 128 + 4 + 64 + 1280 + 64;
  assert_int_equal(c.compiled,
                   f + 17 + 20 + back + (193 + 1) + (2 * 193 + 1) + 1);
}

/* LeNet at batch b: Conv 1->6 3x3 pad 1 ([b,6,8,8]), Relu, MaxPool 2x2
 * ([b,6,4,4]), Conv 6->16 3x3 ([b,16,2,2]), Relu, Flatten, Gemm 64->32,
 * Relu, Gemm 32->10; 3350 parameters in 8 tensors.
 *   forward: conv1 2*384b*9 = 6912b, Relu 384b, MaxPool 96b*4 = 384b,
 *            conv2 2*64b*6*9 = 6912b, Relu 64b, gemm(b,64,32) 4128b,
 *            Relu 32b, gemm(b,32,10) 650b = 19466b
 *   backward: fc2 dX 640b dW 640b db 10b, Relu 32b, fc1 dX 4096b
 *             dW 4096b db 32b, Relu 64b, conv2 dX 6912b dW 6912b db 64b,
 *             MaxPoolGrad 96b*5 = 480b, Relu 384b, conv1 dW 6912b
 *             db 384b = 31658b */
static void check_lenet(const char *model, gint64 b) {
  Counts c = count(model, b, WEIR_LOSS_SOFTMAX_CROSS_ENTROPY);
  gint64 f = 6912 * b + 384 * b + 384 * b + 6912 * b + 64 * b +
             gemm(b, 64, 32) + 32 * b + gemm(b, 32, 10);
  assert_int_equal(f, 19466 * b);
  assert_int_equal(c.forward, f);
  gint64 back = (640 + 640 + 10 + 32 + 4096 + 4096 + 32 + 64 + 6912 + 6912 +
                 64 + 480 + 384 + 6912 + 384) *
                b;
  assert_int_equal(back, 31658 * b);
  assert_int_equal(c.compiled, f + back + ce_sgd(b, 10, 3350));
  /* the contractions: forward conv1, conv2, fc1, fc2; fc2 and fc1 dX
   * and dW; the native convolution gradients dX of conv2, dW of both */
  assert_int_equal(c.contractions, 6912 * b + 6912 * b + gemm(b, 64, 32) +
                                       gemm(b, 32, 10) +
                                       (640 + 640 + 4096 + 4096) * b +
                                       (6912 + 6912 + 6912) * b);
}

static void test_lenet(void **state) {
  (void)state;
  check_lenet("lenet", 4);
}

/* the same network at batch 64 (the benchmark's LeNet) */
static void test_lenet64(void **state) {
  (void)state;
  check_lenet("lenet64", 64);
}

/* digits_cnn, batch 4: Conv 1->8 3x3 pad 1 ([4,8,8,8]), Relu, MaxPool 2x2
 * ([4,8,4,4]), Flatten, Gemm 128->32, Relu, Gemm 32->10.
 *   forward: conv 2*2048*9 = 36864, Relu 2048, MaxPool 512*4 = 2048,
 *            gemm(4,128,32) 32896, Relu 128, gemm(4,32,10) 2600 = 76584
 *   backward: fc2 dX 2560 dW 2560 db 40, Relu 128, fc1 dX 32768
 *             dW 32768 db 128, MaxPoolGrad 512*5 = 2560, Relu 2048,
 *             conv dW 36864 db 2048
 *   parameters 8*9+8 + 128*32+32 + 32*10+10 = 4538 in 6 tensors */
static void test_digits_cnn(void **state) {
  (void)state;
  Counts c = count("digits_cnn", 4, WEIR_LOSS_SOFTMAX_CROSS_ENTROPY);
  gint64 f = 36864 + 2048 + 2048 + gemm(4, 128, 32) + 128 + gemm(4, 32, 10);
  assert_int_equal(f, 76584);
  assert_int_equal(c.forward, f);
  gint64 back =
      2560 + 2560 + 40 + 128 + 32768 + 32768 + 128 + 2560 + 2048 + 36864 + 2048;
  assert_int_equal(c.compiled, f + back + ce_sgd(4, 10, 4538));
}

/* resnet, batch 2 (input [2,3,16,16]): every activation is [2,16,16,16]
 * = 8192 values.  Stem Conv 3->16 3x3: 2*8192*27 = 442368; four block
 * convolutions 16->16 3x3: 2*8192*144 = 2359296 each; 5 BatchNorm
 * (inference: 6 per element) 49152 each; 5 Relu and 2 Add 8192 each;
 * GlobalAveragePool 8192 adds + 32 divisions = 8224; Gemm 16->10:
 * gemm(2,16,10) = 660.  Forward = 10191540.
 * The step (batch-norm in training mode, 17 parameter tensors) is checked
 * on its contractions: the forward ones, each convolution's dW, dX of all
 * but the stem, and the Gemm's dX and dW (640 each). */
static void test_resnet(void **state) {
  (void)state;
  Counts c = count("resnet", 2, WEIR_LOSS_SOFTMAX_CROSS_ENTROPY);
  gint64 f = 442368 + 4 * 2359296 + 5 * 49152 + 5 * 8192 + 2 * 8192 + 8224 +
             gemm(2, 16, 10);
  assert_int_equal(f, 10191540);
  assert_int_equal(c.forward, f);
  gint64 fwd_contractions = 442368 + 4 * 2359296 + 660;
  assert_int_equal(c.contractions, fwd_contractions + 4 * 2359296 +
                                       (4 * 2359296 + 442368) + 640 + 640);
}

/* transformer, batch 2, sequence 8, d 32, 4 heads of 8, feed-forward 64;
 * 16 = 2*8 rows.  Forward: QKV MatMul 2*16*96*32 = 98304 + bias Add 1536;
 * scaling Div 512; Q K^T 8 heads x 2*8*8*8 = 8192; Softmax 5 per element
 * x 512 = 2560; attention x V 8192; output projection gemm(16,32,32) =
 * 33280; residual Add 512; LayerNorm (ReduceMean 512+16, Sub 512, Pow
 * 512, ReduceMean 528, Add eps 16, Sqrt 16, Div 512, Mul 512, Add 512)
 * = 3648; linear1 MatMul 2*16*64*32 = 65536 + Add 1024; Relu 1024;
 * linear2 65536 + Add 512; residual Add 512; LayerNorm 3648.
 * Forward = 294528.  The step (mse) is checked on its contractions: the
 * forward's 279040, plus the QKV weight's gradient 98304 (the input needs
 * none), both operands of Q K^T and of attention x V (4 x 8192), dX and
 * dW of the output projection (2 x 32768) and of both linear layers
 * (4 x 65536): 458752. */
static void test_transformer(void **state) {
  (void)state;
  Counts c = count("transformer", 2, WEIR_LOSS_MSE);
  gint64 ln = 528 + 512 + 512 + 528 + 16 + 16 + 512 + 512 + 512;
  assert_int_equal(ln, 3648);
  gint64 f = 98304 + 1536 + 512 + 8192 + 2560 + 8192 + gemm(16, 32, 32) + 512 +
             ln + 65536 + 1024 + 1024 + 65536 + 512 + 512 + ln;
  assert_int_equal(f, 294528);
  assert_int_equal(c.forward, f);
  gint64 fwd_contractions = 98304 + 8192 + 8192 + 33280 + 65536 + 65536;
  assert_int_equal(fwd_contractions, 279040);
  assert_int_equal(c.contractions,
                   fwd_contractions + 98304 + 4 * 8192 + 2 * 32768 + 4 * 65536);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp),          cmocka_unit_test(test_digits_mlp),
      cmocka_unit_test(test_diabetes_mlp), cmocka_unit_test(test_lenet),
      cmocka_unit_test(test_lenet64),      cmocka_unit_test(test_digits_cnn),
      cmocka_unit_test(test_resnet),       cmocka_unit_test(test_transformer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
