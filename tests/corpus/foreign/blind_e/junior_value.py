import torch

# my autograd engine - based on the micrograd idea but with torch tensors


def reduce_grad(grad, shape):
    # if broadcasting happened we need to sum the grad back to the right shape
    while len(grad.shape) > len(shape):
        grad = grad.sum(dim=0)
    for i in range(len(shape)):
        if shape[i] == 1 and grad.shape[i] != 1:
            grad = grad.sum(dim=i, keepdim=True)
    return grad


class Tensor:
    def __init__(self, data, requires_grad=False, _children=(), _op=""):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._backward = lambda: None
        self._prev = _children
        self._op = _op
        self._g = None  # gradient flowing into this node during backward

    def __repr__(self):
        return "Tensor(data=" + str(self.data) + ", grad=" + str(self.grad) + ")"

    def _send(self, g):
        # add gradient into a node (used by the backward functions)
        if not self.requires_grad:
            return
        if self._g is None:
            self._g = g
        else:
            self._g = self._g + g

    def __add__(self, other):
        out = Tensor(self.data + other.data, self.requires_grad or other.requires_grad, (self, other), "+")

        def _backward():
            self._send(reduce_grad(out._g, self.data.shape))
            other._send(reduce_grad(out._g, other.data.shape))

        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Tensor(self.data * other.data, self.requires_grad or other.requires_grad, (self, other), "*")

        def _backward():
            self._send(reduce_grad(out._g * other.data, self.data.shape))
            other._send(reduce_grad(out._g * self.data, other.data.shape))

        out._backward = _backward
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, self.requires_grad or other.requires_grad, (self, other), "@")

        def _backward():
            self._send(out._g @ other.data.T)
            other._send(self.data.T @ out._g)

        out._backward = _backward
        return out

    def __neg__(self):
        out = Tensor(-self.data, self.requires_grad, (self,), "neg")

        def _backward():
            self._send(-out._g)

        out._backward = _backward
        return out

    def __sub__(self, other):
        return self + (-other)

    def relu(self):
        out = Tensor(torch.relu(self.data), self.requires_grad, (self,), "relu")

        def _backward():
            self._send(out._g * (self.data > 0))

        out._backward = _backward
        return out

    def sum(self):
        out = Tensor(self.data.sum(), self.requires_grad, (self,), "sum")

        def _backward():
            self._send(out._g * torch.ones_like(self.data))

        out._backward = _backward
        return out

    def backward(self, grad=None):
        # build a topological ordering of the graph (iterative so deep graphs work)
        topo = []
        visited = set()
        stack = [[self, 0]]
        visited.add(self)
        while stack:
            node, i = stack[-1]
            if i < len(node._prev):
                stack[-1][1] += 1
                child = node._prev[i]
                if child not in visited:
                    visited.add(child)
                    stack.append([child, 0])
            else:
                stack.pop()
                topo.append(node)

        if grad is None:
            grad = torch.ones_like(self.data)
        self._g = grad

        # go one node at a time and apply the chain rule
        for node in topo:
            if node._g is None:
                continue
            if len(node._prev) == 0:
                # leaf: store gradient (add to previous grad if there is one)
                if node.grad is None:
                    node.grad = node._g.clone()
                else:
                    node.grad = node.grad + node._g
            else:
                node._backward()
            node._g = None

        # free the graph
        for node in topo:
            node._prev = ()
            node._backward = lambda: None
