import torch


class Tensor:
    """
    Autograd tensor.

    Every Tensor knows its parents and a backwardFn that, given the gradient of
    this tensor, returns the gradients for each parent (same order).
    """

    def __init__(self, data, requires_grad=False, parents=None, backwardFn=None):
        self.data = data
        self.grad = None
        self.parents = parents if parents is not None else []
        self.backwardFn = backwardFn
        if self.parents:
            # a computed tensor needs a gradient when its inputs need one
            self.requires_grad = all(p.requires_grad for p in self.parents)
        else:
            self.requires_grad = requires_grad

    # ------------------------------------------------------------------ helpers

    def isLeaf(self):
        return self.backwardFn is None

    def accumulateGrad(self, g):
        if self.grad is None:
            self.grad = g.clone()
        else:
            self.grad = self.grad + g

    @staticmethod
    def toTensor(value, like):
        if isinstance(value, Tensor):
            return value
        return Tensor(torch.full_like(like.data, float(value)))

    @staticmethod
    def reduceToShape(grad, shape):
        """Sum out the dimensions that broadcasting added or stretched."""
        while grad.dim() > len(shape):
            grad = grad.sum(dim=0)
        for axis in range(len(shape)):
            if shape[axis] == 1 and grad.shape[axis] != 1:
                grad = grad.sum(dim=axis, keepdim=True)
        return grad

    # ------------------------------------------------------------------ core

    def __add__(self, other):
        other = Tensor.toTensor(other, self)
        shapeA, shapeB = self.data.shape, other.data.shape

        def backwardAdd(g):
            return [Tensor.reduceToShape(g, shapeA), Tensor.reduceToShape(g, shapeB)]

        return Tensor(self.data + other.data, parents=[self, other], backwardFn=backwardAdd)

    def __mul__(self, other):
        other = Tensor.toTensor(other, self)
        a, b = self.data, other.data

        def backwardMul(g):
            return [Tensor.reduceToShape(g * b, a.shape), Tensor.reduceToShape(g * a, b.shape)]

        return Tensor(a * b, parents=[self, other], backwardFn=backwardMul)

    def __matmul__(self, other):
        a, b = self.data, other.data

        def backwardMatmul(g):
            return [g @ b.transpose(0, 1), a.transpose(0, 1) @ g]

        return Tensor(a @ b, parents=[self, other], backwardFn=backwardMatmul)

    def relu(self):
        positive = self.data > 0

        def backwardRelu(g):
            return [g * positive]

        return Tensor(torch.clamp(self.data, min=0), parents=[self], backwardFn=backwardRelu)

    def sum(self):
        shape = self.data.shape

        def backwardSum(g):
            return [g.expand(shape)]

        return Tensor(self.data.sum(), parents=[self], backwardFn=backwardSum)

    # ------------------------------------------------------------------ extensions

    def __neg__(self):
        return Tensor(-self.data, parents=[self], backwardFn=lambda g: [-g])

    def __sub__(self, other):
        return self + (-Tensor.toTensor(other, self))

    def __truediv__(self, other):
        other = Tensor.toTensor(other, self)
        a, b = self.data, other.data

        def backwardDiv(g):
            return [Tensor.reduceToShape(g / b, a.shape),
                    Tensor.reduceToShape(-g * a / (b * b), b.shape)]

        return Tensor(a / b, parents=[self, other], backwardFn=backwardDiv)

    def exp(self):
        result = torch.exp(self.data)
        return Tensor(result, parents=[self], backwardFn=lambda g: [g * result])

    def log(self):
        x = self.data
        return Tensor(torch.log(x), parents=[self], backwardFn=lambda g: [g / x])

    def tanh(self):
        result = torch.tanh(self.data)
        return Tensor(result, parents=[self], backwardFn=lambda g: [g * (1 - result * result)])

    def sigmoid(self):
        result = torch.sigmoid(self.data)
        return Tensor(result, parents=[self], backwardFn=lambda g: [g * result * (1 - result)])

    def mean(self):
        shape, count = self.data.shape, self.data.numel()
        return Tensor(self.data.mean(), parents=[self], backwardFn=lambda g: [g.expand(shape) / count])

    # ------------------------------------------------------------------ backward

    def topologicalOrder(self):
        """Nodes in an order where every node comes after all of its parents."""
        order = []
        visited = set()
        stack = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in visited:
                continue
            visited.add(id(node))
            stack.append((node, True))
            for parent in node.parents:
                if parent.requires_grad and id(parent) not in visited:
                    stack.append((parent, False))
        return order

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if grad is None:
            grad = torch.ones_like(self.data)
        grads = {id(self): grad}
        for node in reversed(self.topologicalOrder()):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node.isLeaf():
                node.accumulateGrad(g)
                continue
            for parent, pg in zip(node.parents, node.backwardFn(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
