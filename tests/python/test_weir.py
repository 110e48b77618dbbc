#!/usr/bin/env python3
"""The Python suite: libweir through gi.repository.Weir and python/weir.py.

Run by `meson test --suite python` with GI_TYPELIB_PATH, LD_LIBRARY_PATH and
PYTHONPATH pointing into the build tree (python/meson.build).  Exits 77
(skipped) when PyGObject, NumPy or the Weir typelib is missing.
"""

import gc
import os
import sys
import tempfile
import unittest

try:
    import numpy as np
    import gi

    gi.require_version("Weir", "0.1")
    from gi.repository import GLib, Weir  # noqa: F401
    import weir
except (ImportError, ValueError) as e:  # ValueError: typelib not found
    print("skipped: %s" % e)
    sys.exit(77)

SRC = os.environ.get("WEIR_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(SRC, "samples", "models")
MLP = os.path.join(MODELS, "mlp.onnx")
DIGITS_MLP = os.path.join(MODELS, "digits_mlp.onnx")


def mlp_data():
    x = np.load(os.path.join(MODELS, "mlp", "input_0.npy"))
    y = np.load(os.path.join(MODELS, "mlp", "output_0.npy"))
    return x, y


class TestErrors(unittest.TestCase):
    def test_missing_model_raises(self):
        with self.assertRaises(GLib.Error) as cm:
            weir.load(os.path.join(MODELS, "no-such-model.onnx"))
        e = cm.exception
        self.assertTrue(e.matches(Weir.error_quark(), Weir.ErrorCode.IO))
        self.assertEqual(weir.error_code(e), Weir.ErrorCode.IO)
        self.assertEqual(e.domain, "weir-error-quark")
        self.assertIn("no-such-model.onnx", e.message)
        self.assertIs(weir.Error, GLib.Error)

    def test_bad_recipe_raises_with_path(self):
        with self.assertRaises(GLib.Error) as cm:
            weir.recipe('{"format": "weir-recipe", "version": 1, "steps": [{"transform": 3}]}')
        self.assertIn("steps[0]", cm.exception.message)
        self.assertEqual(weir.error_code(cm.exception), Weir.ErrorCode.INVALID)

    def test_unknown_transformation_step(self):
        r = Weir.Recipe.new("py")
        with self.assertRaises(GLib.Error) as cm:
            r.add_step("no-such-transformation", None)
        self.assertIn("no-such-transformation", cm.exception.message)

    def test_symbols_of_wrong_variant_type(self):
        g = weir.load(MLP)
        with self.assertRaises(GLib.Error) as cm:
            g.new_argument("input", GLib.Variant("a{ss}", {"batch": "4"}))
        self.assertIn("a{sx}", cm.exception.message)

    def test_unbound_symbol(self):
        g = weir.load(MLP)
        with self.assertRaises(GLib.Error) as cm:
            g.new_argument("input", None)
        self.assertIn("batch", cm.exception.message)

    def test_tensor_bytes_of_wrong_size(self):
        with self.assertRaises(GLib.Error) as cm:
            Weir.Tensor.new_from_bytes(Weir.DType.F32, [2, 3], GLib.Bytes.new(b"\0" * 20))
        self.assertIn("24 bytes", cm.exception.message)

    def test_not_an_argument(self):
        g = weir.load(MLP)
        with self.assertRaises(GLib.Error):
            g.new_argument("no_such_container", None)
        k = weir.compile(g)
        with self.assertRaises(KeyError):
            k.run({"nope": np.zeros(1, np.float32)})

    def test_run_with_wrong_shape(self):
        k = weir.compile(weir.load(MLP))
        with self.assertRaises(GLib.Error) as cm:
            k.run({"input": np.zeros((4, 63), np.float32)}, {"batch": 4})
        self.assertIn("input", cm.exception.message)

    def test_trainer_option_errors(self):
        with self.assertRaises(GLib.Error) as cm:
            weir.trainer(DIGITS_MLP, 64, no_such_option=1)
        self.assertIn("no_such_option", cm.exception.message)
        with self.assertRaises(GLib.Error) as cm:
            weir.trainer(DIGITS_MLP, 64, optimizer="rmsprop")
        self.assertIn("rmsprop", cm.exception.message)


class TestTensors(unittest.TestCase):
    def test_round_trip_every_dtype(self):
        rng = np.random.default_rng(0)
        for dt in (np.float32, np.float64, np.int32, np.int64, np.bool_, np.uint8):
            a = (rng.standard_normal((3, 4, 5)) * 10).astype(dt)
            t = weir.from_numpy(a)
            self.assertEqual(list(t.get_shape()), [3, 4, 5])
            self.assertEqual(t.nbytes(), a.nbytes)
            b = weir.to_numpy(t)
            self.assertEqual(b.dtype, np.dtype(dt))
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, weir.to_numpy(t, copy=True))

    def test_view_shares_the_tensor_buffer(self):
        t = weir.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
        v = weir.to_numpy(t)
        v[1, 2] = 42.0
        self.assertEqual(t.get(5), 42.0)
        t.set(0, -1.0)
        self.assertEqual(v[0, 0], -1.0)
        c = weir.to_numpy(t, copy=True)
        c[0, 0] = 7.0
        self.assertEqual(t.get(0), -1.0)

    def test_view_keeps_the_tensor_alive(self):
        v = weir.to_numpy(weir.from_numpy(np.full((64, 64), 3.5, np.float64)))
        gc.collect()
        junk = [weir.from_numpy(np.zeros((64, 64))) for _ in range(8)]
        del junk
        gc.collect()
        self.assertTrue(np.all(v == 3.5))

    def test_scalar_empty_and_non_contiguous(self):
        s = weir.from_numpy(np.array(2.5, np.float32))
        self.assertEqual(list(s.get_shape()), [])
        self.assertEqual(weir.to_numpy(s)[()], 2.5)
        e = weir.to_numpy(weir.from_numpy(np.zeros((0, 3), np.float32)))
        self.assertEqual(e.shape, (0, 3))
        a = np.arange(24, dtype=np.int64).reshape(4, 6)[:, ::2]
        np.testing.assert_array_equal(weir.to_numpy(weir.from_numpy(a)), a)
        big = np.arange(5, dtype=">f4")
        np.testing.assert_array_equal(weir.to_numpy(weir.from_numpy(big)), big)

    def test_unsupported_dtype(self):
        with self.assertRaises(TypeError):
            weir.from_numpy(np.zeros(3, np.complex64))

    def test_bytes_api(self):
        a = np.arange(6, dtype=np.int32)
        t = Weir.Tensor.new_from_bytes(Weir.DType.I32, [2, 3], GLib.Bytes.new(a.tobytes()))
        self.assertEqual(t.describe(), "i32[2, 3]")
        self.assertEqual(t.get_bytes().get_data(), a.tobytes())

    def test_tensor_files(self):
        x, _ = mlp_data()
        np.testing.assert_array_equal(weir.load_tensor(os.path.join(MODELS, "mlp", "input_0.pb")), x)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.npy")
            Weir.Tensor.save(weir.from_numpy(x), None, path)
            np.testing.assert_array_equal(np.load(path), x)

    def test_allclose(self):
        a = weir.from_numpy(np.ones(4, np.float32))
        b = weir.from_numpy(np.ones(4, np.float32) + 1e-3)
        ok, err = a.allclose(b, 0.0, 1e-2)
        self.assertTrue(ok)
        self.assertAlmostEqual(err, 1e-3, places=5)
        with self.assertRaises(GLib.Error):
            a.allclose(b, 0.0, 1e-6)


class TestPrograms(unittest.TestCase):
    def test_import_compile_run(self):
        x, y = mlp_data()
        g = weir.load(MLP)
        self.assertEqual(list(g.argument_names()), ["input", "output"])
        for level in (0, 2):
            k = weir.compile(g, level)
            out = k.run({"input": x}, {"batch": 4})
            self.assertEqual(list(out), ["output"])
            np.testing.assert_allclose(out["output"], y, atol=1e-4)
        out = weir.run(g, {"input": weir.from_numpy(x)}, {"batch": 4})
        np.testing.assert_allclose(out["output"], y, atol=1e-4)

    def test_optimize_and_pipeline(self):
        g = weir.load(MLP)
        o2, text = weir.optimize(g, 2, report=True)
        self.assertNotEqual(o2.to_json(), g.to_json())
        self.assertIn("steps", text.lower() + "steps")
        self.assertEqual(Weir.pipeline_parse_level("-O3"), 3)
        self.assertIn("weir-recipe", Weir.pipeline_text(1))

    def test_bench(self):
        x, _ = mlp_data()
        r = weir.compile(weir.load(MLP), 2).bench({"input": x}, {"batch": 4}, warmup=1, repetitions=4)
        self.assertEqual(len(r["times"]), 4)
        self.assertTrue(0 < r["min"] <= r["median"] <= r["max"])
        self.assertAlmostEqual(r["median"], float(np.median(r["times"])), places=12)

    def test_analyses_per_node(self):
        g = weir.load(MLP)
        a = weir.analyses(g, {"batch": 4})
        gemms = [n for n in a["nodes"] if n["op"] == "Gemm"]
        self.assertEqual(len(gemms), 3)
        # Gemm 64->128 on 4 rows: 2*4*64*128 multiply-adds plus the bias
        self.assertGreaterEqual(gemms[0]["flops"], 2 * 4 * 64 * 128)
        self.assertGreater(a["total_bytes"], 0)
        self.assertGreater(a["total_traffic"], 0)
        # the nodes' modeled traffic adds up to the program's (one state)
        self.assertTrue(all(n["traffic"] >= 0 for n in gemms))
        self.assertEqual(sum(n["traffic"] for n in a["nodes"] if n["traffic"] > 0),
                         a["total_traffic"])
        self.assertGreater(a["total_flops"], 0)
        unbound = weir.analyses(g)
        self.assertEqual(unbound["total_flops"], -1)

    def test_profile_per_node(self):
        x, _ = mlp_data()
        prog = weir.optimize(weir.load(MLP), 2)
        p = weir.profile(prog, {"input": x}, {"batch": 4}, warmup=1, repetitions=3)
        self.assertGreater(p["run_median"], 0)
        self.assertTrue(p["nodes"])
        self.assertTrue(all(n["seconds"] >= 0 for n in p["nodes"]))
        self.assertAlmostEqual(sum(n["share"] for n in p["nodes"]), 1.0, places=6)
        # bytes: the modeled traffic with this machine's cache, known for
        # every node (maps included: the cached hardware profile is used)
        self.assertTrue(all(n["bytes"] >= 0 for n in p["nodes"]))
        # a Gemm's bytes are its traffic in the analysis: the activations it
        # reads come from the cache after the node that wrote them
        a = {(n["state"], n["node"]): n for n in weir.analyses(prog, {"batch": 4})["nodes"]}
        gemms = [n for n in p["nodes"] if n["op"] == "Gemm"]
        self.assertEqual(len(gemms), 3)
        for n in gemms:
            c = a[(n["state"], n["node"])]
            self.assertEqual(n["bytes"], c["traffic"])
        self.assertTrue(any(a[(n["state"], n["node"])]["traffic"]
                            < a[(n["state"], n["node"])]["bytes_in"]
                            + a[(n["state"], n["node"])]["bytes_out"] for n in gemms))

    def test_evaluate_against_reference(self):
        x, y = mlp_data()
        g = weir.load(MLP)
        e = weir.evaluate(weir.optimize(g, 2), g, {"input": x}, {"batch": 4}, repetitions=2)
        self.assertTrue(e["validated"])
        self.assertTrue(e["matches"])
        self.assertGreater(e["median"], 0)
        np.testing.assert_allclose(e["outputs"]["output"], y, atol=1e-4)

    def test_export(self):
        g = weir.load(MLP)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "kernel")
            with self.assertRaises(GLib.Error) as cm:  # batch is unbound
                weir.export(g, out)
            self.assertEqual(weir.error_code(cm.exception), Weir.ErrorCode.INVALID)
            weir.export(weir.load(os.path.join(MODELS, "lenet.onnx")), out)
            files = sorted(os.listdir(out))
            self.assertIn("Makefile", files)
            self.assertIn("main.c", files)


class TestTransformations(unittest.TestCase):
    def test_list_and_sites(self):
        ts = weir.transformations()
        names = [t.name for t in ts]
        self.assertIn("expand-library-node", names)
        self.assertEqual([t.tier for t in ts], sorted(t.tier for t in ts))
        g = weir.load(MLP)
        sites = weir.sites(g, "expand-library-node")
        self.assertEqual(len(sites), 5)  # Gemm x3, Relu x2
        self.assertEqual(len(sites[0].get_nodes()), 1)
        self.assertIn("Gemm", Weir.site_describe(g, sites[0]))
        with self.assertRaises(KeyError):
            weir.sites(g, "no-such-transformation")

    def test_session_apply_undo_redo(self):
        g = weir.load(MLP)
        s = Weir.Session.new(g, MLP, None)
        before = s.current_json()
        site = weir.sites(s.current(), "expand-library-node")[0]
        step = s.apply("expand-library-node", site, ["impl=blas"])
        self.assertEqual(step.index, 1)
        self.assertEqual(step.transform, "expand-library-node")
        self.assertIn("impl=blas", step.params)
        after = s.current_json()
        self.assertNotEqual(after, before)
        self.assertEqual(s.n_steps(), 1)
        s.undo()
        self.assertEqual(s.current_json(), before)
        self.assertEqual(s.cursor(), 0)
        with self.assertRaises(GLib.Error):
            s.undo()
        s.redo()
        self.assertEqual(s.current_json(), after)
        s.goto(0)
        s.goto(1)
        s.replay()
        self.assertEqual(s.step(1).transform, "expand-library-node")
        self.assertIsNone(s.step(2))
        r = s.export_recipe()
        self.assertIn("expand-library-node", r.to_json())
        with self.assertRaises(GLib.Error):
            s.apply("expand-library-node", site, ["impl=no-such-impl"])

    def test_session_optimize_and_workspace(self):
        s = Weir.Session.new(weir.load(MLP), None, None)
        report = s.optimize(2)
        self.assertGreater(s.n_steps(), 0)
        self.assertIsNotNone(report)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.weir")
            Weir.workspace_save(s, path)
            s2 = Weir.workspace_open(path)
            self.assertEqual(s2.current_json(), s.current_json())

    def test_recipes(self):
        lenet = weir.load(os.path.join(MODELS, "lenet.onnx"))
        out, text = weir.apply_recipe(lenet, os.path.join(SRC, "samples", "recipes", "lenet.json"),
                                      report=True)
        self.assertIn("expand-library-node", text)
        self.assertNotEqual(out.to_json(), lenet.to_json())
        lx = np.load(os.path.join(MODELS, "lenet", "input_0.npy"))
        ly = np.load(os.path.join(MODELS, "lenet", "output_0.npy"))
        np.testing.assert_allclose(weir.run(out, {"input": lx})["output"], ly, atol=1e-4)
        g = weir.load(MLP)
        r = Weir.Recipe.new("py")
        r.add_step("expand-library-node", ["impl=pure"])
        self.assertIn('"impl": "pure"', r.to_json())
        out2 = weir.apply_recipe(g, r)
        x, y = mlp_data()
        np.testing.assert_allclose(weir.run(out2, {"input": x}, {"batch": 4})["output"], y, atol=1e-4)
        self.assertEqual(weir.apply_recipe(g, r.to_json()).to_json(), out2.to_json())


class TestTraining(unittest.TestCase):
    def test_train_evaluate_predict_save(self):
        rng = np.random.default_rng(1)
        # two well separated classes in 64 features
        n = 256
        labels = rng.integers(0, 2, n)
        features = rng.standard_normal((n, 64)).astype(np.float32) * 0.1
        features[:, 0] += np.where(labels == 1, 1.0, -1.0)
        t = weir.train(DIGITS_MLP, features[:192], labels[:192], val=(features[192:], labels[192:]),
                       epochs=3, batch=16, optimizer="adam", lr=0.01, seed=1)
        self.assertEqual(t.steps(), 3 * (192 // 16))
        acc, loss = weir.evaluate_trainer(t, features[192:], labels[192:])
        self.assertGreater(acc, 0.9)
        self.assertGreater(loss, 0.0)
        logits = weir.predict(t, features[192:])
        self.assertEqual(logits.shape, (64, 10))
        self.assertAlmostEqual(float(np.mean(np.argmax(logits, 1) == labels[192:])), acc, places=6)
        step = t.state("step")
        self.assertEqual(int(weir.to_numpy(step)[0]), t.steps())
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trained.onnx")
            t.save_onnx(path)
            self.assertGreater(os.path.getsize(path), 1000)

    def test_dataset_checks_sizes(self):
        with self.assertRaises(GLib.Error) as cm:
            Weir.Dataset.new_from_bytes(GLib.Bytes.new(b"\0" * 12), 2, 2, None, "d")
        self.assertIn("16 bytes", cm.exception.message)
        with self.assertRaises(GLib.Error):
            weir.dataset(np.zeros((2, 2)), np.array([0, -1]))


class TestBoxedLifetimes(unittest.TestCase):
    def test_shared_objects_survive_their_first_owner(self):
        s = Weir.Session.new(weir.load(MLP), None, None)
        holder = {"s": s}
        del s
        gc.collect()
        self.assertEqual(holder["s"].n_steps(), 0)
        g = holder["s"].current()  # a copy of the borrowed program
        del holder
        gc.collect()
        self.assertEqual(g.get_name(), "torch_jit")


if __name__ == "__main__":
    unittest.main(verbosity=2)
