"""Grades a hand-written reverse-mode autograd engine against PyTorch's autograd."""

__version__ = "0.1.0"
