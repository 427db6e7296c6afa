"""The static allowlist scan: proof is a violation, the suspicious is a review entry, each with its line."""

import textwrap

import pytest

from harness.integrity.scan import Findings, ReviewEntry, inspect_source, member_line
from harness.integrity.allowlist import WHY


def _scan(source: str) -> Findings:
    return inspect_source(textwrap.dedent(source))


def _violations(source: str) -> list[str]:
    return list(_scan(source).violations)


def _review(source: str) -> list[tuple[int | None, str]]:
    """(line, why key) of every review entry."""
    keys = {text: key for key, text in WHY.items()}
    return [(entry.line, keys[entry.why]) for entry in _scan(source).review]


# ---- violations: resolved uses of torch's autograd, whatever the spelling ------------------------


@pytest.mark.parametrize("source, expected", [
    ("import torch.autograd\n", ["line 1: imports torch.autograd: torch's autograd"]),
    ("from torch import autograd\n", ["line 1: imports torch.autograd: torch's autograd"]),
    ("from torch.autograd import grad\n", ["line 1: imports torch.autograd.grad: torch's autograd"]),
    ("import torch\ng = torch.autograd.grad\n", ["line 2: uses torch.autograd.grad: torch's autograd"]),
    ("import torch as T\nfw = T.autograd.forward_ad\n", ["line 2: uses torch.autograd.forward_ad: torch's autograd"]),
    ("from torch import autograd as A\ng = A.grad(1, 2)\n", ["line 1: imports torch.autograd: torch's autograd",
                                                            "line 2: uses torch.autograd.grad: torch's autograd"]),
    ("import torch\nm = torch\nn = m\nx = n.autograd\n", ["line 4: uses torch.autograd: torch's autograd"]),
    ("from torch import *\ng = autograd.grad\n", ["line 2: uses torch.autograd.grad: torch's autograd"]),
    ("import torch\nwith torch.enable_grad():\n    pass\n", ["line 2: uses torch.enable_grad: torch's autograd"]),
    ("import torch\ntorch.set_grad_enabled(True)\n", ["line 2: uses torch.set_grad_enabled: torch's autograd"]),
    ("import functorch\n", ["line 1: imports functorch: torch's autograd"]),
    ("from torch.func import vjp\n", ["line 1: imports torch.func.vjp: torch's autograd"]),
    ("import torch\nw = torch.nn.Parameter(torch.ones(2))\n", ["line 2: uses torch.nn.Parameter: torch's autograd"]),
    ("import torch.nn as nn\nlayer = nn.Linear(2, 3)\n", ["line 2: uses torch.nn.Linear: torch's autograd"]),
    ("import torch\nclass F(torch.autograd.Function):\n    pass\n",
     ["line 2: uses torch.autograd.Function: torch's autograd"]),
    ("import torch\ne = torch._C._ImperativeEngine()\n",
     ["line 2: uses torch._C._ImperativeEngine: torch's autograd"]),
    ("import torch\nb = torch.Tensor.backward\n", ["line 2: uses torch.Tensor.backward: torch's autograd"]),
    ("import harness.ops\n", ["line 1: imports harness.ops: " + WHY["grader"]]),
    ("from reference import Tensor\n", ["line 1: imports reference.Tensor: " + WHY["grader"]]),
])
def test_a_resolved_use_of_torch_autograd_is_a_violation(source, expected):
    assert _violations(source) == expected


@pytest.mark.parametrize("source, expected", [
    ("def f(x):\n    x.data.requires_grad_()\n", ["line 2: calls requires_grad_() on a torch tensor: torch's autograd"]),
    ("def f(x):\n    x.requires_grad_(True)\n", ["line 2: calls requires_grad_() on a torch tensor: torch's autograd"]),
    ("def f(x):\n    getattr(x, 'requires' + '_grad_')()\n",
     ["line 2: calls requires_grad_() on a torch tensor: torch's autograd"]),
    ("import torch\nt = torch.ones(2, requires_grad=True)\n",
     ["line 2: creates a torch tensor with requires_grad=True (torch.ones): torch's autograd"]),
    ("def f(self, flag):\n    return self.data.new_zeros(2, requires_grad=flag)\n",
     ["line 2: creates a torch tensor with requires_grad=True (a torch tensor method): torch's autograd"]),
    ("def f(self):\n    self.data.backward()\n", ["line 2: calls torch's .backward() on a torch tensor: torch's autograd"]),
    ("def f(self):\n    self.data.requires_grad = True\n",
     ["line 2: sets requires_grad on a torch tensor: torch's autograd"]),
    ("def f(self):\n    setattr(self.data, 'requires_grad', True)\n",
     ["line 2: sets requires_grad on a torch tensor: torch's autograd"]),
    ("def f(self):\n    return self.data.grad_fn.next_functions\n",
     ["line 2: reads .grad_fn of a torch tensor: torch's autograd"]),
    ("import torch\nb = type(torch.ones(1)).backward\n", ["line 2: uses torch.Tensor.backward: torch's autograd"]),
])
def test_switching_recording_on_for_a_torch_tensor_is_a_violation(source, expected):
    assert _violations(source) == expected


@pytest.mark.parametrize("source", [
    "import torch\nx = getattr(torch, 'auto' 'grad')\n",
    "import torch\nx = getattr(torch, 'auto' + 'grad')\n",
    "import torch\nx = getattr(torch, ''.join(['auto', 'grad']))\n",
    "import torch\nx = getattr(torch, 'dargotua'[::-1])\n",
    "import torch\nx = getattr(torch, bytes.fromhex('6175746f67726164').decode())\n",
    "import torch\nx = getattr(torch, f\"{'auto'}grad\")\n",
    "import torch\nname = 'auto'\nname += 'grad'\nx = getattr(torch, 'autograd')\n",
    "import torch\nPIECES = ('au', 'to', 'grad')\nx = getattr(torch, ''.join(PIECES))\n",
    "import torch\ndef get():\n    return torch\nx = get().autograd\n",
    "import torch\nx = vars(torch)['autograd']\n",
    "import torch\nx = torch.__dict__['autograd']\n",
    "import sys\nx = sys.modules['torch.autograd']\n",
    "import sys\nx = sys.modules['torch'].autograd\n",
    "import importlib\nx = importlib.import_module('torch.autograd')\n",
    "x = __import__('torch.autograd')\n",
    "import operator, torch\nx = operator.attrgetter('autograd')(torch)\n",
    "import torch\nx = torch.functional.torch.autograd\n",
    "import torch\nx = object.__getattribute__(torch, 'autograd')\n",
    "exec('import torch\\ntorch.autograd.grad(1, 2)')\n",
    "import torch\nx = eval('torch.autograd')\n",
    "import torch\nx = torch.__dict__.get('autograd')\n",
    "import sys\nx = sys.modules.get('torch.autograd')\n",
    "import torch\nx = globals()['torch'].autograd\n",
    "import torch\nx = torch.__getattribute__('autograd')\n",
    "import importlib\nx = importlib.import_module('torch').autograd\n",
    "x = __import__('torch.autograd', fromlist=['grad']).grad\n",
    "import torch.autograd as ag\n",
    "import torch\ndef f(g=torch.autograd.grad):\n    return g\n",
    "import torch\nx = f'{torch.autograd}'\n",
    "import torch\nclass A:\n    engine = torch.autograd\n",
    "import torch\nx = torch._C._TensorBase.backward\n",
])
def test_spellings_that_resolve_to_torch_autograd_are_violations(source):
    violations = _violations(source)
    assert violations, "not seen"
    assert all(v.endswith(": torch's autograd") for v in violations), violations


def test_a_folded_name_through_a_function_parameter_is_resolved():
    source = '''
        import torch

        def fetch(name):
            return getattr(torch, name)

        fetch("exp")
        fetch("auto" + "grad")
    '''
    assert _violations(source) == ["line 5: uses torch.autograd: torch's autograd"]


# ---- review: what an engine does not need ----------------------------------------------------------


@pytest.mark.parametrize("source, expected", [
    ("import ctypes\n", [(1, "memory")]),
    ("import os\nos.system('ls')\n", [(1, "process")]),
    ("import subprocess, signal, socket\n", [(1, "process")]),
    ("import threading\n", [(1, "threads")]),
    ("import multiprocessing\n", [(1, "threads")]),
    ("import inspect\n", [(1, "frames")]),
    ("import importlib\n", [(1, "import")]),
    ("import pickle\n", [(1, "decode")]),
    ("import base64\n", [(1, "decode")]),
    ("import jax\n", [(1, "other_ad")]),
    ("import scipy\n", [(1, "unknown")]),
    ("from . import helper\n", [(1, "relative")]),
    ("import gc\nobjs = gc.get_objects()\n", [(2, "objects")]),
    ("import gc\ngc.freeze()\n", [(2, "objects")]),
    ("import sys\nm = sys.modules\n", [(2, "modules")]),
    ("import sys\nf = sys._getframe(1)\n", [(2, "frames")]),
    ("import sys\nsys.settrace(None)\n", [(2, "trace")]),
    ("import torch\nm = torch.sys.modules\n", [(2, "modules")]),
    ("import dataclasses\nf = dataclasses.inspect.currentframe()\n", [(2, "frames")]),
    ("import contextlib\ncontextlib.os.system('ls')\n", [(2, "process")]),
    ("from torch.overrides import _pop_mode_temporarily\n", [(1, "modes")]),
    ("import torch\nf = torch.jit.script\n", [(2, "torch_tools")]),
    ("import torch\nv = torch._VF\n", [(2, "torch_private")]),
    ("import torch\nrelu = torch.nn.ReLU()\n", [(2, "nn")]),
    ("import torch\nopt = torch.optim.SGD\n", [(2, "optim")]),
    ("x = ().__class__.__base__.__subclasses__()\n", [(1, "dunder")]),
    ("g = (lambda: 0).__globals__\n", [(1, "dunder")]),
    ("b = __builtins__\n", [(1, "builtins")]),
    ("import builtins\n", [(1, "builtins")]),
    ("def f(frame):\n    return frame.f_back.f_globals\n", [(2, "frames")]),
    ("exec('x = 1')\n", [(1, "code")]),
    ("eval(compile('1', 'f', 'eval'))\n", [(1, "code")]),
    ("m = __import__('math')\n", [(1, "import")]),
    ("g = globals()\n", [(1, "namespace")]),
    ("v = vars()\n", [(1, "namespace")]),
    ("f = open('/proc/self/mem', 'rb')\n", [(1, "proc")]),
    ("f = open('notes.txt')\n", [(1, "open")]),
    ("def f(pid):\n    return open(f'/proc/{pid}/mem', 'rb')\n", [(2, "proc")]),
    ("def f(n):\n    return open(f'fill-{n}', 'wb')\n", [(2, "open")]),
    ("import logging.config\nr = logging.config.BaseConfigurator({}).resolve\n", [(1, "resolver"), (2, "resolver")]),
    ("import string\nf = string.Formatter().get_field('0.autograd', [1], {})\n", [(2, "resolver")]),
    ("import typing\nh = typing.get_type_hints(len)\n", [(2, "resolver")]),
    ("from typing import ForwardRef\n", [(1, "resolver")]),
    ("import numpy as np\ndef f(a):\n    return np.add(a, 1)\n", [(3, "numpy")]),
    ("import numpy as np\nc = np.complex128\n", [(2, "numpy")]),
    ("import torch\nc = torch.complex128\n", [(2, "complex")]),
    ("def f(x, h):\n    return x + 1j * h\n", [(2, "complex")]),
    ("l = locals()\n", [(1, "namespace")]),
    ("breakpoint()\n", [(1, "debugger")]),
    ("import torch\ndef f(name):\n    return getattr(torch, name)\n", [(3, "getattr")]),
    ("g = getattr\n", [(1, "getattr")]),
    ("import torch\ntorch.allclose = lambda *a: True\n", [(2, "patch")]),
    ("import torch\nclass T(torch.Tensor):\n    pass\n", [(2, "subclass")]),
    ("def f(t):\n    return t.grad_fn\n", [(2, "unresolved")]),
    ("def f(m):\n    return m.autograd.grad\n", [(2, "unresolved")]),
    ("def f(self):\n    return self.data.grad\n", [(2, "torch_grad")]),
    ("def f(x, cls):\n    x.__class__ = cls\n", [(2, "class_change")]),
    ("__name__ = 'x'\n", [(1, "main_name")]),
])
def test_what_an_engine_does_not_need_is_a_review_entry(source, expected):
    assert _violations(source) == []
    assert _review(source) == expected


def test_review_entries_name_line_construct_and_reason():
    findings = _scan("import math\nimport gc\n\nleft = gc.get_objects()\n")
    assert findings.review == (ReviewEntry(4, "gc.get_objects", WHY["objects"]),)
    assert findings.review[0].to_dict() == {
        "line": 4, "construct": "gc.get_objects",
        "why": "scans or reaches every live object in the process, the grader's runtime checks included"}


def test_a_module_flagged_at_its_import_is_not_flagged_again_at_each_use():
    assert _review("import os\nos.getpid()\nos.getcwd()\n") == [(1, "process")]


def test_a_renamed_main_guard_is_not_trusted():
    source = '''
        __name__ = "__main__"
        if __name__ == "__main__":
            import torch.autograd
    '''
    assert _violations(source) == ["line 4: imports torch.autograd: torch's autograd"]
    assert _review(source) == [(2, "main_name")]


_REBINDINGS = {
    "assignment": "{name} = '__main__'",
    "augmented": "{name} += ''",
    "annotated": "{name}: str = '__main__'",
    "walrus": "({name} := '__main__')",
    "import_as": "from math import pi as {name}",
    "import_module_as": "import math as {name}",
    "star_import": "from os.path import *",
    "def": "def {name}():\n    pass",
    "class": "class {name}:\n    pass",
    "for": "for {name} in ['__main__']:\n    pass",
    "with_as": "import contextlib\nwith contextlib.nullcontext('__main__') as {name}:\n    pass",
    "except_as": "try:\n    pass\nexcept KeyError as {name}:\n    pass",
    "match_capture": "match '__main__':\n    case {name}:\n        pass",
    "match_star": "match ['__main__']:\n    case [*{name}]:\n        pass",
    "match_rest": "match {{}}:\n    case {{**{name}}}:\n        pass",
    "global": "def f():\n    global {name}\n    {name} = '__main__'",
    "del": "del {name}",
    "argument": "def f({name}=None):\n    pass",
    "lambda_argument": "f = lambda {name}: None",
    "comprehension": "[0 for {name} in ['__main__']]",
    "setattr": "import typing\nsetattr(typing, '{name}', True)",
    "globals": "globals()['{name}'] = '__main__'",
}
"""Every binding form, each a line before the guarded block (``{name}`` is the guard's name)."""


@pytest.mark.parametrize("form", sorted(_REBINDINGS))
def test_a_main_guard_rebound_in_any_form_is_scanned(form):
    source = _REBINDINGS[form].format(name="__name__") + "\nif __name__ == '__main__':\n    import torch.autograd\n"
    assert [v.split(": ", 1)[1] for v in _violations(source)] == ["imports torch.autograd: torch's autograd"]


@pytest.mark.parametrize("form", sorted(_REBINDINGS))
def test_type_checking_rebound_in_any_form_is_scanned(form):
    source = ("from typing import TYPE_CHECKING\n" + _REBINDINGS[form].format(name="TYPE_CHECKING")
              + "\nif TYPE_CHECKING:\n    import torch.autograd\n")
    assert [v.split(": ", 1)[1] for v in _violations(source)] == ["imports torch.autograd: torch's autograd"]


@pytest.mark.parametrize("source", [
    "if TYPE_CHECKING:\n    import torch.autograd\n",  # never imported: builtins may hold the name
    "import builtins\nbuiltins.TYPE_CHECKING = True\nif TYPE_CHECKING:\n    import torch.autograd\n",
    "from typing_fake import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch.autograd\n",
    "import math as typing\nif typing.TYPE_CHECKING:\n    import torch.autograd\n",
    "import typing\ntyping.TYPE_CHECKING = True\nif typing.TYPE_CHECKING:\n    import torch.autograd\n",
    "if typing.TYPE_CHECKING:\n    import torch.autograd\n",
    "from typing import TYPE_CHECKING as T, TYPE_CHECKING\nfrom os import TYPE_CHECKING\nif TYPE_CHECKING:\n"
    "    import torch.autograd\n",
])
def test_type_checking_is_trusted_only_as_typings_own(source):
    assert any("imports torch.autograd" in v for v in _violations(source))


@pytest.mark.parametrize("source", [
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch.autograd\n",
    "import typing\nif typing.TYPE_CHECKING:\n    import torch.autograd\n",
    "from typing import *\nif TYPE_CHECKING:\n    import torch.autograd\n",
    "from math import *\nif __name__ == '__main__':\n    import torch.autograd\n",
    "import torch\nclass T:\n    pass\nsetattr(T, 'x' + 'y', 1)\nif __name__ == '__main__':\n    import torch.autograd\n",
])
def test_a_standard_guard_still_skips_its_block(source):
    assert _violations(source) == []


def test_each_binding_of_name_is_a_review_entry_at_its_line():
    source = "match '__main__':\n    case __name__:\n        pass\nfrom math import pi as __name__\n"
    assert _scan(source).review == (ReviewEntry(2, "case __name__", WHY["main_name"]),
                                    ReviewEntry(4, "import pi as __name__", WHY["main_name"]))


@pytest.mark.parametrize("source, expected", [
    # a class pattern's keywords are attribute reads of the subject, nested patterns read further
    ("import torch\nmatch torch:\n    case object(_C=c):\n        pass\n",
     ["line 3: uses torch._C: torch's C internals: torch-function modes are switched off and the autograd engine "
      "lives there"]),
    ("import torch\nmatch torch:\n    case object(autograd=object(grad=g)):\n        pass\n",
     ["line 3: uses torch.autograd.grad: torch's autograd"]),  # the longest path a line names
    ("import torch\nmatch [torch]:\n    case [object(autograd=a)] | (object(autograd=a),):\n        pass\n",
     []),  # an item of a sequence is not resolved: the subject is a list the scan does not follow
    ("import torch\nmatch torch.__dict__:\n    case {'_C': c}:\n        pass\n", ["line 3: uses torch._C: "
     "torch's C internals: torch-function modes are switched off and the autograd engine lives there"]),
])
def test_a_match_pattern_reads_what_it_names(source, expected):
    assert _violations(source) == expected


@pytest.mark.parametrize("source, expected", [
    ("def f(w):\n    match w:\n        case object(__closure__=cells):\n            return cells\n",
     [(3, "dunder")]),
    ("def f(frame):\n    match frame:\n        case object(f_back=object(f_globals=g)):\n            return g\n",
     [(3, "frames")]),  # one entry a line
    ("class P:\n    __match_args__ = ('__closure__',)\n", [(2, "dunder")]),
])
def test_a_match_pattern_walking_internals_is_a_review_entry(source, expected):
    assert _review(source) == expected


def test_an_engine_that_dispatches_with_match_is_clean():
    source = """
        class Add:
            __match_args__ = ("a", "b")

            def __init__(self, a, b):
                self.a, self.b = a, b

        def grads(node, g):
            match node:
                case Add(a, b):
                    return {a: g, b: g}
                case {"op": "neg", "x": x}:
                    return {x: -g}
                case [first, *rest] | (first, *rest):
                    return {first: g}
                case object(requires_grad=False):
                    return {}
            return {}
        """
    assert (_violations(source), _review(source)) == ([], [])


# ---- legitimate engines are clean ---------------------------------------------------------------------


LOOKALIKE = '''
    """Mentions torch.autograd.grad in a docstring, which is not code."""
    from __future__ import annotations

    import contextlib
    import functools
    import gc
    import math
    import sys
    from typing import TYPE_CHECKING, Callable

    import numpy as np
    import torch as T
    import torch.nn.functional as F
    from torch import no_grad as torch_no_grad

    if TYPE_CHECKING:
        from torch.autograd import Function as TorchFunction

    sys.setrecursionlimit(10_000)


    class Function:
        """Its own minitorch-style op base: apply, saved tensors, next functions."""

        def __init__(self):
            self.saved_tensors = ()
            self.next_functions = ()

        @classmethod
        def apply(cls, *xs):
            return cls().forward(*xs)


    class Tensor:
        __slots__ = ("data", "grad", "requires_grad", "grad_fn", "__weakref__")

        def __init__(self, data, requires_grad: bool = False) -> None:
            self.data = data.detach() if isinstance(data, T.Tensor) else T.as_tensor(data)
            self.requires_grad = requires_grad
            self.grad = None
            self.grad_fn = None

        def __repr__(self):
            return f"Tensor({np.array2string(self.data.numpy())})"

        def __add__(self, other):
            return type(self)(self.data + other.data)

        def __getattr__(self, name):
            return getattr(self.data, name)

        def backward(self, grad: T.Tensor | None = None):
            # torch.autograd.grad would be cheating; this comment is not code.
            enabled = gc.isenabled()
            gc.disable()
            with T.no_grad(), torch_no_grad():
                seed = T.ones_like(self.data, requires_grad=False)
            if self.grad_fn is not None:
                for fn in self.grad_fn.next_functions:
                    pass
            self.data.requires_grad_(False)
            if enabled:
                gc.enable()
            return getattr(self, "_backward_" + "impl", seed)


    for _name in ("exp", "log", "tanh"):
        setattr(Tensor, _name, (lambda f: lambda self: Tensor(f(self.data)))(getattr(T, _name)))


    def _unary(op_name):
        fn = getattr(T, op_name)
        return lambda self: Tensor(fn(self.data))


    Tensor.sigmoid = _unary("sigmoid")
    conv = F.conv2d
    unfold = T.nn.functional.unfold
    off = T.autograd.grad_mode.no_grad


    @contextlib.contextmanager
    def no_grad():
        yield


    @functools.lru_cache(maxsize=None)
    def _eps():
        return math.sqrt(sys.float_info.epsilon)


    def _against_torch():
        x = T.randn(3, requires_grad=True)
        (x * x).sum().backward()
        return T.autograd.grad


    if __name__ == "__main__":
        import torch.autograd
        print(_against_torch())
        t = Tensor(T.ones(2), requires_grad=True)
        t.backward()
'''


def test_a_legitimate_engine_with_every_lookalike_is_clean():
    assert _scan(LOOKALIKE) == Findings()


def test_a_syntax_error_is_left_to_the_import():
    assert inspect_source("def broken(:\n") == Findings()
    assert inspect_source("x = 1\0\n") == Findings()


def test_a_file_too_deep_to_follow_is_flagged_not_a_crash():
    findings = inspect_source("x = 1" + " + 1" * 5000 + "\n")
    assert findings == Findings(review=(ReviewEntry(1, "the whole file", WHY["too_deep"]),))


def test_member_line_finds_a_method_or_its_class():
    source = "import torch\n\nclass Tensor:\n    x = 1\n\n    def backward(self):\n        pass\n"
    assert member_line(source, "Tensor", "backward") == 6
    assert member_line(source, "Tensor", "relu") == 3
    assert member_line(source, "Value", "backward") is None


def test_a_function_only_the_self_test_calls_is_scanned_when_the_file_looks_names_up():
    helper = "import torch\n\ndef helper(t):\n    return torch.autograd.grad(t, [t])\n\n"
    main = "if __name__ == '__main__':\n    helper(1)\n"
    assert _violations(helper + main) == []
    assert _violations(helper + main + "f = locals()['hel' + 'per']\n") == [
        "line 4: uses torch.autograd.grad: torch's autograd"]


def test_numpy_markers_and_printing_are_clean():
    source = ("import numpy as np\n\ndef total(x, axis=None, keepdims=np._NoValue):\n"
              "    keep = keepdims is not np._NoValue\n    return np.array2string(np.asarray(x)), keep\n")
    assert _scan(source) == Findings()


@pytest.mark.parametrize("source, expected", [
    # other standard-library resolvers and text-to-object gadgets
    ("import pkgutil\ng = pkgutil.resolve_name('torch.autograd:grad')\n", [(1, "import")]),
    ("import pydoc\ng = pydoc.locate('torch.autograd.grad')\n", [(1, "unknown")]),
    ("import functools, torch\ng = functools.reduce(getattr, ['autograd', 'grad'], torch)\n", [(2, "getattr")]),
    ("import pickle\ng = pickle.loads(b'ctorch.autograd\\ngrad\\n.')\n", [(1, "decode")]),
    ("import logging.config\nlogging.config.dictConfig({})\n", [(1, "resolver"), (2, "resolver")]),
    ("import typing\nclass N:\n    g: 'torch.autograd.grad'\nh = typing.get_type_hints(N)\n", [(4, "resolver")]),
    # other ways to the grader's objects
    ("import torch\nmodes = torch.overrides.TorchFunctionMode.__subclasses__()\n", [(2, "modes"), (2, "dunder")]),
    ("import torch.utils._pytree as p, gc\nfound = p.tree_map(gc.get_objects, [None])\n",
     [(1, "torch_tools"), (2, "torch_tools"), (2, "objects")]),
    ("import sys\ndef f():\n    return sys.exc_info()[2].tb_frame\n", [(3, "frames")]),
])
def test_resolvers_and_ways_to_the_grader_are_review_entries(source, expected):
    assert _violations(source) == []
    assert _review(source) == expected
