"""weir — NumPy helpers on top of Weir's GObject Introspection bindings.

libweir is introspected as ``gi.repository.Weir`` (namespace Weir, version
0.1; docs/python.md).  Every libweir call is available there as it is; this
module only adds what a script wants around it:

- tensors to and from NumPy arrays (``to_numpy`` views the tensor's own
  buffer without copying; ``from_numpy`` makes the one copy into the
  tensor's 64-byte aligned buffer),
- compiling a program at an optimization level and running it with NumPy
  inputs (``compile``, ``Kernel.run``, ``Kernel.bench``),
- the analyses and the measured time of every node as lists of dicts
  (``analyses``, ``profile``),
- recipes, evaluation, training and export in one call each.

Errors of libweir arrive as ``GLib.Error`` (also exported here as
``weir.Error``); ``error_code(e)`` gives its ``Weir.ErrorCode``.
"""

import ctypes
import os

import numpy as np

import gi


def _require_weir():
    """Loads the Weir typelib: installed, on GI_TYPELIB_PATH, or else from
    $WEIR_BUILD_DIR or the build tree next to this file (<source>/build, as
    ./bootstrap makes it), so scripts run from a fresh clone without
    setting GI_TYPELIB_PATH and LD_LIBRARY_PATH."""
    try:
        gi.require_version("Weir", "0.1")
        return
    except ValueError:
        pass
    gi.require_version("GIRepository", "2.0")
    from gi.repository import GIRepository

    here = os.path.dirname(os.path.abspath(__file__))
    for build in (os.environ.get("WEIR_BUILD_DIR"), os.path.join(here, "..", "build")):
        if build and os.path.isfile(os.path.join(build, "Weir-0.1.typelib")):
            GIRepository.Repository.prepend_search_path(os.path.abspath(build))
            GIRepository.Repository.prepend_library_path(os.path.abspath(build))
            break
    gi.require_version("Weir", "0.1")


_require_weir()
from gi.repository import GLib, Weir  # noqa: E402

Weir.init()

Error = GLib.Error

_TO_NUMPY = {
    Weir.DType.F32: np.dtype("<f4"),
    Weir.DType.F64: np.dtype("<f8"),
    Weir.DType.I32: np.dtype("<i4"),
    Weir.DType.I64: np.dtype("<i8"),
    Weir.DType.BOOL: np.dtype(np.bool_),
    Weir.DType.U8: np.dtype(np.uint8),
}
_FROM_NUMPY = {dt: wt for wt, dt in _TO_NUMPY.items()}


def error_code(err):
    """The Weir.ErrorCode of a GLib.Error raised by libweir, else None."""
    if isinstance(err, GLib.Error) and err.matches(Weir.error_quark(), err.code):
        return Weir.ErrorCode(err.code)
    return None


def symbols_variant(symbols):
    """A dict of symbol values as the GVariant a{sx} the *_tensors calls take."""
    if not symbols:
        return None
    return GLib.Variant("a{sx}", {str(k): int(v) for k, v in symbols.items()})


# ------------------------------------------------------------------ tensors


def weir_dtype(dtype):
    """The Weir.DType of a NumPy dtype (TypeError for others)."""
    dt = np.dtype(dtype)
    if dt.byteorder == ">":
        dt = dt.newbyteorder("<")
    try:
        return _FROM_NUMPY[dt]
    except KeyError:
        raise TypeError("Weir has no element type for NumPy dtype %s" % dt) from None


def to_numpy(tensor, copy=False):
    """The elements of a Weir.Tensor as a NumPy array of its shape.

    Without copy the array is a view of the tensor's buffer that keeps the
    tensor alive; writes through it change the tensor."""
    dtype = _TO_NUMPY[tensor.dtype]
    shape = tuple(tensor.get_shape())
    nbytes = tensor.nbytes()
    if nbytes == 0:
        return np.zeros(shape, dtype)
    buf = (ctypes.c_ubyte * nbytes).from_address(tensor.get_data_address())
    buf._weir_tensor = tensor  # the view owns a reference to the tensor
    view = np.frombuffer(buf, dtype=dtype).reshape(shape)
    return view.copy() if copy else view


def from_numpy(array):
    """A new Weir.Tensor with the elements of array (one copy)."""
    a = np.asarray(array)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)  # (rank >= 1 here: it would make 0-d 1-d)
    dtype = weir_dtype(a.dtype)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    t = Weir.Tensor.try_new(dtype, [int(d) for d in a.shape])
    if a.nbytes:
        ctypes.memmove(t.get_data_address(), a.ctypes.data, a.nbytes)
    return t


def load_tensor(path):
    """A .npy or ONNX .pb tensor file as a NumPy array."""
    tensor, _name = Weir.tensor_load(path)
    return to_numpy(tensor)


# ----------------------------------------------------------------- programs


def load(path):
    """A program from an ONNX model (.onnx) or Weir's JSON format."""
    if Weir.onnx_is_model_path(path):
        return Weir.onnx_import(path, None)
    return Weir.graph_load(path)


def optimize(program, level=Weir.OPT_LEVEL_DEFAULT, report=False):
    """A copy of program with the pipeline of -O<level> applied.

    With report=True returns (program, report text)."""
    g = program.copy()
    rep = Weir.RecipeReport.new()
    Weir.pipeline_apply(g, level, None, rep)
    return (g, rep.to_text()) if report else g


def recipe(source):
    """A Weir.Recipe from a file path, JSON text or a Weir.Recipe."""
    if isinstance(source, Weir.Recipe):
        return source
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return Weir.Recipe.parse(source, -1, None)
    return Weir.Recipe.load(os.fspath(source))


def apply_recipe(program, source, report=False):
    """A copy of program with a recipe applied (all or nothing).

    With report=True returns (program, report text)."""
    g = program.copy()
    rep = Weir.RecipeReport.new()
    Weir.Recipe.apply(g, recipe(source), None, rep)
    return (g, rep.to_text()) if report else g


def transformations():
    """The registered transformations (Weir.TransformInfo), by tier and name."""
    return list(Weir.transforms_list())


def sites(program, transform):
    """Candidate sites (Weir.Site) of a transformation (name or info)."""
    info = Weir.transform_lookup(transform) if isinstance(transform, str) else transform
    if info is None:
        raise KeyError("no transformation named %r" % transform)
    return list(Weir.transform_list_sites(info, program))


def analyses(program, symbols=None):
    """Data movement and FLOPs of the program and of every node.

    A dict: total_traffic (modeled memory traffic with this machine's
    cache, as `weir info` prints it), total_bytes (logical volume: what the
    memlets name, not memory traffic; docs/analysis.md), total_flops,
    peak_transient_bytes (-1: unknown), intensity (FLOPs per byte of
    logical volume), and nodes: a list of dicts (state, node, label, kind,
    op, bytes_in, bytes_out as logical volume, traffic: the modeled traffic
    of a top-level operation, flops)."""
    a = Weir.analysis_compute_symbols(program, symbols_variant(symbols))
    return a.to_variant(program).unpack()


# ------------------------------------------------------------------ kernels


class Kernel:
    """A compiled program (through the compile cache) and its arguments."""

    def __init__(self, program, level=None):
        self.program = program if level is None else optimize(program, level)
        self.kernel = Weir.kernel_compile(self.program, None, None)
        self.arguments = list(self.program.argument_names())

    def _args(self, inputs, symbols):
        args = {}
        for name, value in (inputs or {}).items():
            if name not in self.arguments:
                raise KeyError(
                    "program %r has no argument %r (arguments: %s)"
                    % (self.program.get_name(), name, ", ".join(self.arguments))
                )
            args[name] = value if isinstance(value, Weir.Tensor) else from_numpy(value)
        for name in self.arguments:
            if name not in args:
                args[name] = self.program.new_argument(name, symbols_variant(symbols))
        return args

    def run(self, inputs, symbols=None):
        """Runs once; returns every argument not given in inputs (the
        outputs) as NumPy arrays that view the result tensors."""
        args = self._args(inputs, symbols)
        self.kernel.run_tensors(symbols_variant(symbols), args)
        return {n: to_numpy(t) for n, t in args.items() if n not in (inputs or {})}

    def bench(self, inputs, symbols=None, warmup=3, repetitions=10):
        """Times repetitions runs after warmup untimed ones (seconds)."""
        args = self._args(inputs, symbols)
        r = self.kernel.bench_tensors(symbols_variant(symbols), args, warmup, repetitions)
        return {
            "median": r.median,
            "min": r.min,
            "max": r.max,
            "mean": r.mean,
            "times": np.array(r.get_times(), dtype=np.float64),
        }

    def profile(self, inputs, symbols=None, warmup=1, repetitions=5):
        """profile() of this kernel's program."""
        return profile(self.program, inputs, symbols, warmup, repetitions)


def compile(program, level=None):  # noqa: A001 (the natural name)
    """Compiles program, first optimized at -O<level> when level is given."""
    return Kernel(program, level)


def run(program, inputs, symbols=None, level=None):
    """Compiles (through the cache) and runs once; returns the outputs."""
    return Kernel(program, level).run(inputs, symbols)


def profile(program, inputs, symbols=None, warmup=1, repetitions=5):
    """Measured time of every node beside its FLOPs and bytes.

    A dict: run_median, node_sum (seconds) and nodes: a list of dicts
    (state, node, label, op, seconds, share, flops, bytes: the modeled
    memory traffic with this machine's cache, as `weir profile`; -1:
    unknown)."""
    k = Kernel(program)
    args = k._args(inputs, symbols)
    p = Weir.profile_run_tensors(program, symbols_variant(symbols), args, warmup, repetitions)
    return p.to_variant().unpack()


def evaluate(program, reference=None, inputs=None, symbols=None, warmup=1,
             repetitions=5, seed=1):
    """Compiles, checks against reference (when given) and times program.

    A dict: median, min, max (seconds), reference_seconds, validated,
    matches, max_abs_error, cache_hit, compile_seconds, outputs (NumPy)."""
    tensors = None
    if inputs:
        tensors = {n: v if isinstance(v, Weir.Tensor) else from_numpy(v) for n, v in inputs.items()}
    e = Weir.evaluate_tensors(program, reference, symbols_variant(symbols), tensors,
                              warmup, repetitions, seed)
    bench = e.get_bench()
    outputs = {}
    for name in program.argument_names():
        t = e.get_output(name)
        if t is not None:
            outputs[name] = to_numpy(t)
    return {
        "median": bench.median,
        "min": bench.min,
        "max": bench.max,
        "reference_seconds": e.reference_seconds,
        "validated": e.validated,
        "matches": e.matches,
        "max_abs_error": e.max_abs_error,
        "cache_hit": e.cache_hit,
        "compile_seconds": e.compile_seconds,
        "outputs": outputs,
    }


def export(program, directory, force=False):
    """Writes a self-contained kernel directory (docs/export.md)."""
    if force and os.path.isdir(directory) and os.listdir(directory):
        raise ValueError("export(force=True) is not supported from Python; "
                         "remove %s first" % directory)
    Weir.export(program, os.fspath(directory), None, None)
    return directory


# ----------------------------------------------------------------- training


def dataset(features, labels=None, source=None):
    """A Weir.Dataset from NumPy arrays: features [n, f] (float32) and
    integer class labels [n]."""
    f = np.ascontiguousarray(features, dtype=np.float32)
    if f.ndim != 2:
        f = f.reshape(f.shape[0], -1)
    lb = None
    if labels is not None:
        lb = GLib.Bytes.new(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    return Weir.Dataset.new_from_bytes(GLib.Bytes.new(f.tobytes()), f.shape[0],
                                       f.shape[1], lb, source)


def _option(value):
    if isinstance(value, bool):
        raise TypeError("trainer options take no booleans")
    if isinstance(value, str):
        return GLib.Variant("s", value)
    if isinstance(value, (int, np.integer)):
        return GLib.Variant("x", int(value))
    return GLib.Variant("d", float(value))


def trainer(model_path, n_features, **options):
    """A Weir.Trainer: the model's training and evaluation programs compiled.

    options: loss, optimizer, lr, momentum, weight_decay, epochs, batch,
    steps_per_call, seed, threads, opt_level, recipe (see
    weir_trainer_new_with_options)."""
    v = GLib.Variant("a{sv}", {k: _option(v) for k, v in options.items()})
    return Weir.Trainer.new_with_options(os.fspath(model_path), n_features, v)


def train(model_path, features, labels, val=None, **options):
    """Trains a classifier on NumPy data; returns the trainer.

    val: (features, labels) held out, evaluated after each epoch."""
    train_set = dataset(features, labels, "train")
    val_set = dataset(*val, source="val") if val is not None else None
    t = trainer(model_path, train_set.n_features, **options)
    t.fit(train_set, val_set)
    return t


def evaluate_trainer(t, features, labels):
    """(accuracy, mean cross-entropy) of a trainer on NumPy data."""
    result = t.evaluate(dataset(features, labels, "evaluate"))
    return tuple(result[-2:])


def predict(t, features):
    """Logits [n, classes] of a trainer's current model."""
    d = dataset(features, None, "predict")
    data = t.predict_bytes(d).get_data()
    return np.frombuffer(data, dtype=np.float32).reshape(d.n_samples, t.n_classes())
