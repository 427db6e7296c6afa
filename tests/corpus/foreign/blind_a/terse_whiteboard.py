import torch


def _unb(g, s):  # sum broadcast dims back to shape s
    while g.dim() > len(s): g = g.sum(0)
    for i, n in enumerate(s):
        if n == 1 and g.shape[i] > 1: g = g.sum(i, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad = data, requires_grad, None
        self._prev, self._bw = (), None

    def _op(self, data, prev, bw):
        out = Tensor(data, any(p.requires_grad for p in prev))
        if out.requires_grad: out._prev, out._bw = prev, bw
        return out

    def _c(self, o): return o if isinstance(o, Tensor) else Tensor(torch.tensor(o, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._c(o)
        return self._op(self.data + o.data, (self, o), lambda g: (_unb(g, self.data.shape), _unb(g, o.data.shape)))

    def __mul__(self, o):
        o = self._c(o)
        return self._op(self.data * o.data, (self, o),
                        lambda g: (_unb(g * o.data, self.data.shape), _unb(g * self.data, o.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return self._op(self.data @ o.data, (self, o), lambda g: (g @ o.data.T, self.data.T @ g))

    def relu(self):
        return self._op(self.data.clamp(min=0), (self,), lambda g: (g * (self.data > 0),))

    def sum(self):
        return self._op(self.data.sum(), (self,), lambda g: (g * torch.ones_like(self.data),))

    def __neg__(self): return self * -1.0
    def __sub__(self, o): return self + -self._c(o)
    def __rsub__(self, o): return self._c(o) + -self

    def backward(self, grad=None):
        if not self.requires_grad: raise RuntimeError("tensor does not require grad")
        if grad is None and self.data.numel() != 1: raise RuntimeError("pass grad for a non-scalar output")
        topo, seen, st = [], set(), [(self, False)]
        while st:
            t, done = st.pop()
            if done: topo.append(t); continue
            if t in seen: continue
            seen.add(t); st.append((t, True))
            st += [(p, False) for p in t._prev if p.requires_grad and p not in seen]
        g0 = torch.ones_like(self.data) if grad is None else grad.to(self.data.dtype).clone()
        self.grad = g0 if self.grad is None else self.grad + g0
        for t in reversed(topo):
            if t._bw is None: continue
            for p, g in zip(t._prev, t._bw(t.grad)):
                if not p.requires_grad: continue
                if p.grad is None: p.grad = g
                else: p.grad += g
        for t in topo: t._prev, t._bw = (), None
