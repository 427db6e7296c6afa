#
# Minimal reverse-mode autograd.
#
# Layout:
#   - each Tensor that is the result of an op stores `inputs_` (vector of parents)
#     and `rule_` (callable: upstream grad -> vector of input grads, same order).
#   - backward() numbers the reachable nodes 0..n-1 in post-order (iterative DFS,
#     explicit stack of frames), keeps a flat array of gradient buffers indexed by
#     node number, and walks the array from n-1 down to 0.
#
import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.grad = None
        self.requires_grad = requires_grad
        self.inputs_ = []
        self.rule_ = None

    # ---- graph construction -------------------------------------------------
    @staticmethod
    def make_result_(data, inputs, rule):
        out = Tensor(data)
        for t in inputs:
            if t.requires_grad:
                out.requires_grad = True
                break
        if out.requires_grad:
            out.inputs_ = list(inputs)
            out.rule_ = rule
        return out

    # ---- core ops -------------------------------------------------------------
    def __add__(self, other):
        def rule(g):
            return [g, g]
        return Tensor.make_result_(self.data + other.data, [self, other], rule)

    def __mul__(self, other):
        a = self.data
        b = other.data

        def rule(g):
            return [g * b, g * a]
        return Tensor.make_result_(a * b, [self, other], rule)

    def __matmul__(self, other):
        a = self.data
        b = other.data
        assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0], "matmul: bad shapes"

        def rule(g):
            return [g @ b.t(), a.t() @ g]
        return Tensor.make_result_(a @ b, [self, other], rule)

    def relu(self):
        mask = (self.data > 0).to(self.data.dtype)

        def rule(g):
            return [g * mask]
        return Tensor.make_result_(self.data * mask, [self], rule)

    def sum(self):
        shape = self.data.shape

        def rule(g):
            return [g * torch.ones(shape, dtype=g.dtype)]
        return Tensor.make_result_(self.data.sum(), [self], rule)

    # ---- extensions -------------------------------------------------------------
    def __neg__(self):
        def rule(g):
            return [-g]
        return Tensor.make_result_(-self.data, [self], rule)

    def __sub__(self, other):
        def rule(g):
            return [g, -g]
        return Tensor.make_result_(self.data - other.data, [self, other], rule)

    def mean(self):
        shape = self.data.shape
        n = self.data.numel()

        def rule(g):
            return [g * torch.ones(shape, dtype=g.dtype) / n]
        return Tensor.make_result_(self.data.mean(), [self], rule)

    @property
    def T(self):
        def rule(g):
            return [g.t()]
        return Tensor.make_result_(self.data.t(), [self], rule)

    def reshape(self, shape):
        old = self.data.shape

        def rule(g):
            return [g.reshape(old)]
        return Tensor.make_result_(self.data.reshape(shape), [self], rule)

    # ---- backward ---------------------------------------------------------------
    def topo_order_(self):
        order = []
        index = {}                 # id(node) -> position in `order`
        state = {id(self): 0}
        stack = [[self, 0]]        # frame = [node, next input to visit]
        while stack:
            frame = stack[-1]
            node, k = frame
            if k < len(node.inputs_):
                frame[1] = k + 1
                child = node.inputs_[k]
                if child.requires_grad and id(child) not in state:
                    state[id(child)] = 0
                    stack.append([child, 0])
            else:
                stack.pop()
                index[id(node)] = len(order)
                order.append(node)
        return order, index

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        order, index = self.topo_order_()
        n = len(order)
        grads = [None] * n
        grads[n - 1] = grad
        for i in range(n - 1, -1, -1):
            node = order[i]
            g = grads[i]
            grads[i] = None
            if g is None:
                continue
            if node.rule_ is None:
                # leaf: hand out a copy so the user can't alias our buffers
                if node.grad is None:
                    node.grad = g.clone()
                else:
                    node.grad += g
                continue
            in_grads = node.rule_(g)
            for child, cg in zip(node.inputs_, in_grads):
                if not child.requires_grad:
                    continue
                j = index[id(child)]
                if grads[j] is None:
                    grads[j] = cg
                else:
                    grads[j] += cg
            # free the graph behind us
            node.inputs_ = []
            node.rule_ = None
