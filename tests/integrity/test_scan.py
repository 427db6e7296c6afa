"""The static integrity scan: every way in is flagged with its line; legitimate code is not."""

import textwrap

import pytest

from harness.integrity import scan


def _scan(source: str) -> list[str]:
    return scan(textwrap.dedent(source))


@pytest.mark.parametrize("source, expected", [
    ("import torch.autograd\n", ["line 1: imports torch.autograd (torch.autograd)"]),
    ("from torch import autograd\n", ["line 1: imports torch.autograd (torch.autograd)"]),
    ("from torch.autograd import grad\n", ["line 1: imports torch.autograd (torch.autograd)",
                                            "line 1: imports torch.autograd.grad (torch.autograd)"]),
    ("import torch\ng = torch.autograd.grad\n", ["line 2: uses torch.autograd"]),
    ("import torch\nwith torch.enable_grad():\n    pass\n", ["line 2: uses torch.enable_grad"]),
    ("import functorch\n", ["line 1: imports functorch (functorch)"]),
    ("from torch.func import vjp\n", ["line 1: imports torch.func (torch.func)",
                                      "line 1: imports torch.func.vjp (torch.func)"]),
    ("import harness.ops\n", ["line 1: imports harness.ops (the grader's own code)"]),
    ("from reference import Tensor\n", ["line 1: imports reference (the grader's own code)",
                                        "line 1: imports reference.Tensor (the grader's own code)"]),
    ("def f(x):\n    x.data.requires_grad_()\n", ["line 2: calls requires_grad_() on a torch tensor"]),
    ("import torch\nt = torch.ones(2, requires_grad=True)\n",
     ["line 2: creates a torch tensor with requires_grad=True (torch.ones)"]),
    ("def f(self):\n    self.data.backward()\n", ["line 2: calls torch's .backward() on a torch tensor"]),
    ("def f(self):\n    self.data.requires_grad = True\n", ["line 2: sets requires_grad on a torch tensor"]),
    ("import torch\nag = getattr(torch, 'auto' 'grad')\n", ["line 2: reaches torch autograd through getattr()"]),
    ("m = __import__('torch.autograd')\n", ["line 1: reaches torch autograd through __import__()"]),
])
def test_flags_each_way_into_torch_autograd(source, expected):
    assert _scan(source) == expected


def test_legitimate_lookalikes_are_not_flagged():
    source = '''
        """Mentions torch.autograd in a docstring, which is not code."""
        import torch

        # torch.autograd.grad would be cheating; this comment is fine.
        class Tensor:
            def __init__(self, data, requires_grad=False):
                self.data = data.detach()
                self.requires_grad = requires_grad
                self.grad = None

            def backward(self):
                with torch.no_grad():
                    self.grad = torch.ones_like(self.data)
                self.data.requires_grad_(False)

        def make():
            return Tensor(torch.ones(2), requires_grad=True)

        if __name__ == "__main__":
            import torch.autograd
            x = torch.ones(2, requires_grad=True)
            (x * 2).sum().backward()
            make().backward()
    '''
    assert _scan(source) == []


def test_a_syntax_error_is_left_to_the_import():
    assert scan("def broken(:\n") == []


@pytest.mark.parametrize("source, expected", [
    ("import torch\noff = torch._C.DisableTorchFunction\n", ["line 2: uses torch._C internals"]),
    ("import torch\nag = getattr(torch, 'auto' + 'grad')\n", ["line 2: reaches torch autograd through getattr()"]),
    ("import torch\ng = getattr(getattr(torch, 'autograd'), 'gr' + 'ad')\n",
     ["line 2: reaches torch autograd through getattr()"]),
])
def test_flags_disguised_routes(source, expected):
    assert _scan(source) == expected


def test_a_computed_getattr_of_an_op_name_is_fine():
    assert _scan("import torch\ndef apply(name, x):\n    return getattr(torch, name)(x)\n") == []


def test_reading_a_grad_attribute_by_name_is_fine():
    assert _scan("def g(t):\n    return getattr(t, 'grad', None)\n") == []
    assert _scan("import torch\nf = getattr(torch, 'func')\n") == ["line 2: reaches torch autograd through getattr()"]
