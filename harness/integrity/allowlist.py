"""What a submission may use, and why everything else is flagged: the policy of the static scan.

The scan (``harness.integrity.scan``) resolves every name in a submission to a
dotted path (``T.autograd.grad`` after ``import torch as T`` is
``torch.autograd.grad``) and asks ``classify`` what that path is. There are
two answers besides "fine":

* **violation**: proof that torch's autograd (or the grader's own code, whose
  oracle is torch's autograd) is used. Only resolved paths earn it, never a
  guess from a string or an attribute name alone.
* **review**: a construct a legitimate engine does not need and a person
  should read: imports outside the allowlist, torch's C internals and mode
  stacks, dynamic code, interpreter and process access.

Allowed imports and why (``ALLOWED_MODULES``): an engine needs torch for
storage and arithmetic, and at most the standard library's small helpers for
numbers, containers, functions, context managers, weak references, type hints
and printing (numpy too, for printing). Each module's attributes are followed
to wherever they lead: ``dataclasses.inspect`` or ``typing.sys.modules`` are
judged as ``inspect`` and ``sys.modules``. Three allowed modules are allowed
only in part: ``sys`` (the recursion limit, number limits and the output
streams; not ``sys.modules`` or frames), ``gc`` (switching the collector on
and off, collecting; not object scans or ``freeze``), ``types`` (not the
constructors of functions, code objects and modules), plus a denylist inside
``numpy`` (raw memory, pickled files).

Flagged for review, by family (``WHY`` holds the sentence a report shows):

* memory, objects, frames, trace: ``ctypes``, ``gc.get_objects()``/``freeze``,
  ``inspect``, ``sys._getframe`` and frame attributes, ``sys.settrace``: they
  reach the grader's objects in the worker, where the runtime checks live;
* modules, import, builtins: ``sys.modules``, ``importlib``, ``__import__``,
  ``builtins``/``__builtins__``: they reach or replace code by a name;
* code, decode: ``exec``/``eval``/``compile``, ``types.FunctionType``,
  ``marshal``/``pickle``/``codecs``/``base64``: code no reading can see;
* threads, process, open/proc: threads and processes run outside the request;
  files, sockets, signals and ``/proc`` are no engine's business;
* torch_c, modes, torch_tools, torch_private, nn, optim: torch's C internals
  and mode stacks (where the guard is switched off), its compilers and
  loaders, and ``torch.nn`` modules (their parameters are tracked);
* dunder, getattr, namespace, patch, unresolved: dunder walks, attribute
  names computed at run time, ``globals()``/``vars()``, assignments into
  modules, and autograd attribute names on objects that could not be resolved;
* other_ad, unknown, relative: other autodiff libraries, any other module.

A violation too: torch's derivative formulas themselves (its backward kernels, ``torch.nn.grad``),
which compute gradients by rules that are not the submission's, without any autograd.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ALLOWED_MODULES", "Classification", "classify", "classify_module", "module_reason",
           "AUTOGRAD_ATTRIBUTES", "TENSOR_AUTOGRAD_ATTRIBUTES", "DUNDER_WALKS", "FRAME_ATTRIBUTES", "WHY"]

Classification = tuple[str, str]
"""``("violation" | "review", why)``."""

ALLOWED_MODULES: Final[dict[str, str]] = {
    "__future__": "compiler directives",
    "torch": "storage and arithmetic (its autograd, C internals and mode stacks are judged name by name)",
    "math": "scalar math", "cmath": "scalar math", "numbers": "number types", "decimal": "number types",
    "fractions": "number types", "statistics": "scalar statistics", "random": "random test values",
    "typing": "type hints", "typing_extensions": "type hints", "dataclasses": "plain records",
    "collections": "containers", "collections.abc": "container types", "heapq": "containers",
    "bisect": "containers", "array": "containers", "graphlib": "topological sorting", "enum": "constants",
    "functools": "function helpers", "itertools": "iteration helpers", "operator": "operators as functions",
    "contextlib": "context managers (no_grad)", "weakref": "weak references (memory release)",
    "abc": "abstract base classes", "copy": "copies", "string": "text", "textwrap": "text", "re": "text",
    "pprint": "printing", "reprlib": "printing", "json": "printing", "warnings": "warnings",
    "logging": "logging", "time": "timing a self-test", "numpy": "printing and comparing values",
    "sys": "the recursion limit and the output streams only",
    "gc": "switching the garbage collector off and on during backward only",
    "types": "simple namespaces only",
}

_PARTIAL_ALLOWED: Final[dict[str, frozenset[str]]] = {
    "sys": frozenset({"setrecursionlimit", "getrecursionlimit", "maxsize", "float_info", "int_info",
                      "float_repr_style", "version", "version_info", "hexversion", "platform", "byteorder",
                      "stdout", "stderr", "getsizeof", "exc_info", "exception", "maxunicode", "argv",
                      "implementation", "get_int_max_str_digits"}),
    "gc": frozenset({"collect", "disable", "enable", "isenabled", "get_count", "get_threshold", "set_threshold",
                     "get_stats"}),
    "logging": frozenset({"getLogger", "Logger", "LoggerAdapter", "basicConfig", "debug", "info", "warning", "warn",
                          "error", "critical", "exception", "log", "DEBUG", "INFO", "WARNING", "WARN", "ERROR",
                          "CRITICAL", "FATAL", "NOTSET", "Handler", "StreamHandler", "NullHandler", "Formatter",
                          "Filter", "LogRecord", "captureWarnings", "disable", "getLevelName", "addLevelName",
                          "root", "shutdown", "lastResort", "raiseExceptions"}),
    "numpy": frozenset({"array", "asarray", "asanyarray", "array2string", "array_repr", "array_str",
                        "set_printoptions", "get_printoptions", "printoptions", "format_float_positional",
                        "format_float_scientific", "allclose", "isclose", "array_equal", "ndarray", "dtype",
                        "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_",
                        "integer", "floating", "number", "generic", "nan", "inf", "pi", "e", "newaxis",
                        "_NoValue", "__version__", "finfo", "iinfo", "shape", "ndim", "size", "isscalar"}),
}
"""Modules allowed in part, by the members they may be used for (a positive list)."""
_PARTIAL_DENIED: Final[dict[str, frozenset[str]]] = {
    "types": frozenset({"FunctionType", "LambdaType", "CodeType", "ModuleType", "FrameType", "TracebackType",
                        "CellType", "MethodWrapperType", "BuiltinFunctionType", "BuiltinMethodType"}),
    "string": frozenset({"Formatter"}),
    "typing": frozenset({"get_type_hints", "ForwardRef", "_eval_type", "evaluate_forward_ref", "_type_check",
                         "get_overloads", "_GenericAlias"}),
}

WHY: Final[dict[str, str]] = {
    "autograd": "torch's autograd",
    "grader": "the grader's own code (its oracle is torch's autograd; reference is the model answer)",
    "memory": "reads and writes the process's memory, where the grader's runtime checks live",
    "objects": "scans or reaches every live object in the process, the grader's runtime checks included",
    "modules": "the table of loaded modules: reaches and replaces the grader's own code in the process",
    "frames": "reads the frames of running code: reaches the grader's variables and functions",
    "trace": "traces or intercepts every call the process makes",
    "code": "builds or runs code at run time, which no reading of the source can check",
    "decode": "decodes bytes into code or objects: a way to hide code from a reading of the source",
    "threads": "runs code outside the request being graded (threads or processes)",
    "process": "process, file-system or network access, which an engine does not need",
    "builtins": "reaches the interpreter's builtins, where every builtin can be replaced",
    "import": "imports a module by a name computed at run time",
    "other_ad": "another library's automatic differentiation",
    "torch_c": "torch's C internals: torch-function modes are switched off and the autograd engine lives there",
    "modes": "torch-function and dispatch modes: the grader's autograd guard is one of them",
    "torch_tools": "a torch compiler, loader or process tool that runs or hides code",
    "torch_private": "a private part of torch that an engine over torch tensors does not need",
    "nn": "torch.nn modules hold parameters that torch's autograd tracks",
    "optim": "torch's optimizers work on gradients that torch's autograd filled in",
    "dunder": "walks interpreter internals (dunder attributes) to reach objects the source never names",
    "getattr": "looks up an attribute by a name computed at run time, which this scan cannot check",
    "namespace": "reads or changes a namespace by name, which this scan cannot check",
    "open": "opens a file, which an engine does not need",
    "proc": "opens a file under /proc, /dev or /sys: the process's own memory and state",
    "debugger": "starts a debugger",
    "patch": "changes a module other code relies on (the grader's checks run in this process too)",
    "subclass": "a torch.Tensor subclass: torch records and dispatches its operations itself",
    "main_name": ("assigns __name__, so the `if __name__ == \"__main__\":` self-test may run at import; "
                  "it is scanned too"),
    "torch_grad": "reads torch's own .grad of a torch tensor, which only torch's autograd fills in",
    "unresolved": "looks like torch's autograd machinery, on an object this scan could not resolve",
    "class_change": "changes an object's class",
    "unknown": "a module outside the allowlist of what an engine needs",
    "relative": "a relative import: a submission is one file",
    "resolver": ("turns text into objects (a resolver, an attribute walk over a format string, string annotations "
                 "evaluated), so the names it reaches are in no code this scan can read"),
    "numpy": ("computes with numpy: an engine computes on torch tensors (numpy is allowed for printing and "
              "comparing values)"),
    "complex": ("complex numbers: an engine over real tensors has no use for them, complex-step differentiation "
                "(one forward pass per input element) does"),
    "too_deep": "nested too deeply or too intricate for the scan to follow: nothing in the file was checked",
    "formula": "torch's derivative formulas (its backward kernels): gradients that are not the submission's own rules",
}

_MODULE_FAMILIES: Final[dict[str, tuple[str, ...]]] = {
    "memory": ("ctypes", "_ctypes", "cffi", "mmap"),
    "frames": ("inspect", "traceback", "dis", "code", "codeop", "linecache", "tracemalloc", "faulthandler"),
    "trace": ("trace", "cProfile", "profile", "bdb", "pdb", "sys.monitoring"),
    "code": ("ast", "symtable", "compileall", "py_compile"),
    "import": ("importlib", "imp", "pkgutil", "runpy", "zipimport", "site", "sysconfig"),
    "decode": ("marshal", "pickle", "_pickle", "copyreg", "shelve", "dill", "cloudpickle", "codecs", "base64",
               "binascii", "zlib", "bz2", "lzma", "gzip", "zipfile", "tarfile", "quopri", "uu", "encodings"),
    "threads": ("threading", "_thread", "multiprocessing", "concurrent", "asyncio", "sched", "_threading_local"),
    "process": ("os", "posix", "nt", "subprocess", "pty", "signal", "socket", "ssl", "select", "selectors",
                "shutil", "pathlib", "io", "_io", "tempfile", "fcntl", "resource", "atexit", "platform",
                "http", "urllib", "ftplib", "smtplib", "webbrowser", "glob", "fnmatch", "filecmp", "fileinput",
                "ctypes.util", "posixpath", "ntpath", "stat", "errno", "pwd", "grp", "termios", "tty"),
    "builtins": ("builtins", "__builtin__", "__main__"),
    "objects": ("gc",),
    "other_ad": ("autograd", "jax", "jaxlib", "tensorflow", "tinygrad", "micrograd", "mxnet", "chainer",
                 "theano", "sympy", "paddle", "mlx", "keras", "flax", "autograd_lib"),
    "grader": ("harness", "reference"),
}

AUTOGRAD_ATTRIBUTES: Final = frozenset({
    "autograd", "grad_fn", "_grad_fn", "next_functions", "forward_ad", "functorch", "_functorch", "_C",
    "overrides", "_pop_mode", "_pop_mode_temporarily", "_push_mode", "DisableTorchFunction",
    "DisableTorchFunctionSubclass", "_DisableTorchDispatch", "_ImperativeEngine", "_EngineBase",
    "_execution_engine", "run_backward", "_run_backward", "make_dual", "unpack_dual", "dual_level", "_make_dual",
    "_unpack_dual", "_enter_dual_level", "enable_grad", "set_grad_enabled", "_set_grad_enabled", "vjp", "jvp",
    "jacrev", "jacfwd", "hessian", "jacobian", "register_hook", "retain_grad", "retains_grad",
    "register_post_accumulate_grad_hook", "_backward_hooks", "saved_tensors_hooks", "Parameter", "Function",
    "requires_grad_", "gradcheck",
})
"""Attribute names that exist only on torch's autograd objects (or on a file's own objects that define them)."""

TENSOR_AUTOGRAD_ATTRIBUTES: Final = frozenset({
    "backward", "requires_grad_", "requires_grad", "retain_grad", "retains_grad", "register_hook",
    "register_post_accumulate_grad_hook", "grad_fn", "_grad_fn", "grad", "_grad", "_backward_hooks",
})
"""Members of torch.Tensor that are torch's autograd: used through ``torch.Tensor.X`` they are proof."""

DUNDER_WALKS: Final = frozenset({
    "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__", "__bases__", "__base__",
    "__mro__", "__dict__", "__getattribute__", "__self__", "__loader__", "__spec__", "__reduce__",
    "__reduce_ex__", "__defaults__", "__kwdefaults__", "__import__", "__build_class__", "__getattr__",
})
FRAME_ATTRIBUTES: Final = frozenset({
    "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame",
    "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "co_code", "co_consts",
})

_AUTOGRAD_OFF_SWITCHES: Final = frozenset({
    "torch.autograd.no_grad", "torch.autograd.grad_mode", "torch.autograd.grad_mode.no_grad",
    "torch.autograd.inference_mode", "torch.autograd.grad_mode.inference_mode", "torch.autograd.is_grad_enabled",
    "torch.autograd.grad_mode.is_grad_enabled",
})
"""Parts of torch.autograd that only switch recording off or read the switch: what torch.no_grad() is."""

_TORCH_AUTOGRAD_TOP: Final = frozenset({"autograd", "func", "_functorch", "functorch", "enable_grad",
                                        "set_grad_enabled", "_make_dual", "_unpack_dual", "_fw_primal_copy",
                                        "_make_dual_copy"})
_TORCH_C_AUTOGRAD: Final = frozenset({"_ImperativeEngine", "_EngineBase", "_autograd", "_functions",
                                      "_set_grad_enabled", "_enter_dual_level", "_exit_dual_level",
                                      "_set_fwd_grad_enabled", "_functorch", "_FunctionBase"})
_TORCH_COMPLEX: Final = frozenset({"complex64", "complex128", "complex32", "cfloat", "cdouble", "chalf", "complex",
                                    "view_as_complex", "polar"})
_TORCH_NN_ALLOWED: Final = frozenset({"functional", "init"})
_TORCH_NN_PARAMETRIC: Final = ("Parameter", "UninitializedParameter", "UninitializedBuffer", "ParameterList",
                               "ParameterDict", "parameter", "Linear", "Bilinear", "LazyLinear", "Conv", "LazyConv",
                               "ConvTranspose", "BatchNorm", "LazyBatchNorm", "LayerNorm", "GroupNorm",
                               "InstanceNorm", "LazyInstanceNorm", "LocalResponseNorm", "RMSNorm", "Embedding",
                               "EmbeddingBag", "RNN", "LSTM", "GRU", "MultiheadAttention", "Transformer",
                               "PReLU")
_TORCH_TOOLS: Final = frozenset({"jit", "fx", "compile", "export", "library", "ops", "hub", "package", "utils",
                                 "classes", "multiprocessing", "distributed", "load", "save", "from_file",
                                 "profiler", "onnx", "backends", "cpp", "serialization", "storage", "compiler",
                                 "UntypedStorage", "TypedStorage", "monitor", "testing"})
_TORCH_GRADIENT_UTILS: Final = frozenset({"torch.utils.checkpoint"})
_TORCH_C_ALIASES: Final = frozenset({"DisableTorchFunction", "DisableTorchFunctionSubclass"})
"""Parts of ``torch._C`` torch also names at its top: judged as ``torch._C`` is."""


def _family_of(module: str) -> str | None:
    for family, names in _MODULE_FAMILIES.items():
        if any(module == name or module.startswith(name + ".") for name in names):
            return family
    return None


def module_reason(module: str) -> str:
    """Why importing ``module`` (outside the allowlist) is flagged."""
    return WHY[_family_of(module) or "unknown"]


def _allowed_root(parts: list[str]) -> str | None:
    for size in (2, 1):
        name = ".".join(parts[:size])
        if len(parts) >= size and name in ALLOWED_MODULES:
            return name
    return None


def classify_module(module: str) -> Classification | None:
    """The verdict on importing ``module`` as a whole (``import x.y``)."""
    if module == "torch.nn" or module == "torch.autograd.grad_mode":
        return None  # parents of allowed parts; what is used from them is judged at each use
    return classify(module)


def classify(path: str) -> Classification | None:
    """The verdict on using the resolved dotted ``path`` (a module, or an attribute of one), or None if fine."""
    parts = path.split(".")
    root = parts[0]
    if root in ("harness", "reference"):
        return "violation", WHY["grader"]
    if root == "functorch":
        return "violation", WHY["autograd"]
    if root == "torch":
        return _classify_torch(path, parts)
    if root == "builtins":
        return _classify_builtin(parts[1]) if len(parts) > 1 else ("review", WHY["builtins"])
    allowed = _allowed_root(parts)
    if allowed is None:
        return "review", module_reason(path)
    member = parts[len(allowed.split("."))] if len(parts) > len(allowed.split(".")) else None
    if member is None:
        return None
    if allowed in _PARTIAL_ALLOWED and member not in _PARTIAL_ALLOWED[allowed]:
        return "review", {"sys": _sys_reason(member), "gc": WHY["objects"], "logging": WHY["resolver"],
                          "numpy": WHY["numpy"]}[allowed]
    if allowed in _PARTIAL_DENIED and member in _PARTIAL_DENIED[allowed]:
        return "review", {"types": WHY["code"], "string": WHY["resolver"], "typing": WHY["resolver"]}[allowed]
    return None


def _sys_reason(member: str) -> str:
    if member == "modules":
        return WHY["modules"]
    if member in ("_getframe", "_current_frames", "_getframemodulename", "exc_traceback", "last_traceback"):
        return WHY["frames"]
    if member in ("settrace", "setprofile", "addaudithook", "gettrace", "getprofile", "monitoring", "audit",
                  "excepthook", "displayhook", "breakpointhook", "unraisablehook"):
        return WHY["trace"]
    if member in ("meta_path", "path_hooks", "path_importer_cache", "path", "builtin_module_names",
                  "stdlib_module_names"):
        return WHY["import"]
    if member in ("__stdout__", "__stderr__", "__stdin__", "stdin", "exit", "_exit"):
        return WHY["process"]
    return "interpreter internals an engine does not need"


_DANGEROUS_BUILTINS: Final[dict[str, str]] = {
    "exec": "code", "eval": "code", "compile": "code", "__import__": "import", "globals": "namespace",
    "vars": "namespace", "locals": "namespace", "breakpoint": "debugger", "open": "open", "__build_class__": "code",
    "getattr": "getattr", "setattr": "getattr", "delattr": "getattr", "__loader__": "import",
    "__spec__": "import",
}


def _classify_builtin(name: str) -> Classification | None:
    family = _DANGEROUS_BUILTINS.get(name)
    return ("review", WHY[family]) if family else None


def dangerous_builtin(name: str) -> str | None:
    """The WHY key of a builtin that is flagged when used other than in a checked call, or None."""
    return _DANGEROUS_BUILTINS.get(name)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _classify_torch(path: str, parts: list[str]) -> Classification | None:
    if len(parts) == 1 or path in _AUTOGRAD_OFF_SWITCHES:
        return None
    top = parts[1]
    if top in _TORCH_AUTOGRAD_TOP or path in _TORCH_GRADIENT_UTILS or path.startswith("torch.utils.checkpoint."):
        return "violation", WHY["autograd"]
    if top in _TORCH_C_ALIASES:
        return "violation", WHY["torch_c"]
    if any("_backward" in part for part in parts[1:]) or parts[1:3] == ["nn", "grad"]:
        return "violation", WHY["formula"]
    if top == "Tensor" or parts[1:3] in (["_C", "TensorBase"], ["_C", "_TensorBase"]):
        rest = parts[2:] if top == "Tensor" else parts[3:]
        member = rest[0] if rest else None
        if member in TENSOR_AUTOGRAD_ATTRIBUTES:
            return "violation", WHY["autograd"]
        if top == "Tensor" and (member is None or not member.startswith("_") or _dunder(member)):
            return None
        if top != "Tensor":
            return "violation", WHY["torch_c"]
        return "review", WHY["torch_private"]
    if top == "_C":
        return "violation", WHY["autograd" if len(parts) > 2 and parts[2] in _TORCH_C_AUTOGRAD else "torch_c"]
    if top in _TORCH_COMPLEX:
        return "review", WHY["complex"]
    if top == "nn":
        if len(parts) == 2 or parts[2] in _TORCH_NN_ALLOWED:
            return None
        if any(parts[2].startswith(prefix) for prefix in _TORCH_NN_PARAMETRIC):
            return "violation", WHY["autograd"]
        return "review", WHY["nn"]
    if top in ("overrides",) or path.startswith("torch.utils._python_dispatch"):
        return "review", WHY["modes"]
    if top == "optim":
        return "review", WHY["optim"]
    if top in _TORCH_TOOLS:
        return "review", WHY["torch_tools"]
    if top.startswith("_") and not _dunder(top):
        return "review", WHY["torch_private"]
    return None
