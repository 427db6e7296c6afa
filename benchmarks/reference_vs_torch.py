"""The reference engine against torch autograd: time and memory, as a ratio table.

    python benchmarks/reference_vs_torch.py [--quick] [--activation tanh]

One run measures both engines on the same workloads and prints median times,
the ratio reference / torch and the target each ratio should meet:

- a chain of small elementwise ops (the interview's mul, add and relu on a
  4-element tensor; ``--activation tanh`` swaps in an extension op): forward
  and backward, where per-op overhead is everything;
- one training step of a 3-layer MLP (batch 256, width 512, relu,
  cross_entropy, plain SGD), where the matmuls should dominate;
- the peak resident memory of a 1,000,000-node chain. Each engine is measured
  in a fresh subprocess so one peak cannot hide the other; the figure is the
  peak minus the resident size right after import.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Final

import torch

from reference import Tensor

CHAIN_NODES = 100_000
MEMORY_CHAIN_NODES = 1_000_000

ENGINES: Final = ("reference", "torch")

# Targets are upper bounds on reference / torch.
CHAIN_BACKWARD_TARGET = 1.5
MLP_STEP_TARGET = 1.1
MEMORY_TARGET = 1.5


def _clock() -> float:
    # CPU time of this process: the machine may be shared, and time spent waiting
    # for a core is not the engine's. With one torch thread it is the work done.
    return time.process_time()


@dataclass(frozen=True)
class Row:
    what: str
    reference: float
    torch: float
    unit: str
    target: float | None = None

    @property
    def ratio(self) -> float:
        return self.reference / self.torch


# ---- workloads: the same code written for each engine -------------------------


def _chain_inputs(engine: str) -> tuple[Any, Any, Any]:
    """A leaf that requires grad and two constants, for the elementwise chain."""
    x = torch.linspace(-1, 1, 4, dtype=torch.float64)
    a = torch.full((4,), 0.999, dtype=torch.float64)
    b = torch.full((4,), 0.01, dtype=torch.float64)
    if engine == "reference":
        return Tensor(x, requires_grad=True), Tensor(a), Tensor(b)
    return x.requires_grad_(), a, b


def build_chain(engine: str, nodes: int, activation: str = "relu") -> tuple[Any, Any]:
    """``nodes`` ops deep: y = activation(y * a + b), repeated. Returns the leaf and a one-element output."""
    x, a, b = _chain_inputs(engine)
    y = x
    for _ in range(nodes // 3):
        y = getattr(y * a + b, activation)()
    for _ in range(nodes % 3):
        y = y * a
    return x, y.sum()


def time_chains(nodes: int, repeats: int, activation: str) -> dict[str, tuple[float, float]]:
    """Median forward and backward seconds per engine over ``repeats`` fresh chains, engines interleaved."""
    times: dict[str, tuple[list[float], list[float]]] = {engine: ([], []) for engine in ENGINES}
    for _ in range(repeats):
        for engine in ENGINES:
            start = _clock()
            x, y = build_chain(engine, nodes, activation)
            built = _clock()
            y.backward()
            done = _clock()
            assert x.grad is not None and x.grad.shape == (4,)
            del x, y  # free this chain before the next one is built
            times[engine][0].append(built - start)
            times[engine][1].append(done - built)
    return {engine: (statistics.median(f), statistics.median(b)) for engine, (f, b) in times.items()}


def mlp_step(engine: str, batch: int = 256, width: int = 512, classes: int = 10) -> Callable[[], None]:
    """One SGD step (forward, backward, update) of a 3-layer relu MLP, as a function to time."""
    gen = torch.Generator().manual_seed(0)
    shapes = [(width, width), (width,), (width, width), (width,), (width, classes), (classes,)]
    raw = [torch.randn(s, generator=gen) * (width ** -0.5) for s in shapes]
    x = torch.randn(batch, width, generator=gen)
    target = torch.randint(0, classes, (batch,), generator=gen)
    lr = 0.01

    if engine == "reference":
        params = [Tensor(p, requires_grad=True) for p in raw]
        inputs = Tensor(x)

        def step() -> None:
            w1, b1, w2, b2, w3, b3 = params
            h = (inputs @ w1 + b1).relu()
            h = (h @ w2 + b2).relu()
            loss = (h @ w3 + b3).cross_entropy(target)
            loss.backward()
            for p in params:
                p.data.sub_(lr * p.grad)  # the graph is released, so updating in place is safe
                p.grad = None
    else:
        params = [p.clone().requires_grad_() for p in raw]

        def step() -> None:
            w1, b1, w2, b2, w3, b3 = params
            h = (x @ w1 + b1).relu()
            h = (h @ w2 + b2).relu()
            loss = torch.nn.functional.cross_entropy(h @ w3 + b3, target)
            loss.backward()
            with torch.no_grad():
                for p in params:
                    p.sub_(lr * p.grad)
                    p.grad = None

    return step


def time_mlp_steps(repeats: int) -> dict[str, float]:
    """Median seconds of one training step per engine, engines interleaved."""
    steps = {engine: mlp_step(engine) for engine in ENGINES}
    for step in steps.values():  # warm up the allocator and kernels
        step()
        step()
    times: dict[str, list[float]] = {engine: [] for engine in ENGINES}
    for _ in range(repeats):
        for engine, step in steps.items():
            start = _clock()
            step()
            times[engine].append(_clock() - start)
    return {engine: statistics.median(t) for engine, t in times.items()}


# ---- peak memory, one subprocess per engine ----------------------------------


def chain_peak_memory(engine: str, nodes: int, activation: str) -> float:
    """Peak resident MiB above the post-import baseline for building and backpropagating a chain."""
    proc = subprocess.run(
        [sys.executable, __file__, "--memory-child", engine, str(nodes), "--activation", activation],
        capture_output=True, text=True, check=True,
    )
    return float(proc.stdout.strip().splitlines()[-1])


def _memory_child(engine: str, nodes: int, activation: str) -> None:
    build_chain(engine, 10, activation)[1].backward()  # first-use allocations are part of the baseline
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    x, y = build_chain(engine, nodes, activation)
    y.backward()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((peak - baseline) / 1024)  # ru_maxrss is in KiB on Linux


# ---- the table ---------------------------------------------------------------


def measure(quick: bool, activation: str) -> list[Row]:
    chain_nodes = CHAIN_NODES // 10 if quick else CHAIN_NODES
    memory_nodes = MEMORY_CHAIN_NODES // 10 if quick else MEMORY_CHAIN_NODES
    repeats = 3 if quick else 5
    chains = time_chains(chain_nodes, repeats, activation)
    (ref_fwd, ref_bwd), (torch_fwd, torch_bwd) = chains["reference"], chains["torch"]
    mlp = time_mlp_steps(repeats * 4)
    rows = [
        Row(f"chain of {chain_nodes:,} ops: forward", ref_fwd * 1e3, torch_fwd * 1e3, "ms"),
        Row(f"chain of {chain_nodes:,} ops: backward", ref_bwd * 1e3, torch_bwd * 1e3, "ms", CHAIN_BACKWARD_TARGET),
        Row("MLP 3x512, batch 256: training step", mlp["reference"] * 1e3, mlp["torch"] * 1e3, "ms",
            MLP_STEP_TARGET),
        Row(f"chain of {memory_nodes:,} ops: peak RSS", chain_peak_memory("reference", memory_nodes, activation),
            chain_peak_memory("torch", memory_nodes, activation), "MiB", MEMORY_TARGET),
    ]
    return rows


def render(rows: list[Row]) -> str:
    header = f"{'measure':<40} {'reference':>12} {'torch':>12} {'ratio':>7} {'target':>8}  ok"
    lines = [header, "-" * len(header)]
    for row in rows:
        target = "" if row.target is None else f"<= {row.target:g}x"
        ok = "" if row.target is None else ("yes" if row.ratio <= row.target else "NO")
        lines.append(
            f"{row.what:<40} {row.reference:>9.1f} {row.unit:<2} {row.torch:>9.1f} {row.unit:<2} "
            f"{row.ratio:>6.2f}x {target:>8}  {ok}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, fewer repeats")
    parser.add_argument("--activation", choices=("relu", "tanh"), default="relu", help="the chain's elementwise op")
    parser.add_argument("--memory-child", nargs=2, metavar=("ENGINE", "NODES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    # One thread: the ratio should measure the engines, not how busy the other cores are.
    torch.set_num_threads(1)
    if args.memory_child:
        _memory_child(args.memory_child[0], int(args.memory_child[1]), args.activation)
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), medians of CPU time, "
          f"chain of mul/add/{args.activation}")
    print(render(measure(args.quick, args.activation)))


if __name__ == "__main__":
    main()
