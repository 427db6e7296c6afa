"""Reading one case from its YAML nodes: every key validated, the program built, the stated
numbers checked against torch autograd (float64)."""

from __future__ import annotations

import keyword
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from harness.compare import Tolerance, compare, tolerance_for
from harness.errors import did_you_mean
from harness.lazy_modules import lazy_module
from harness.ops import LEVELS, OPS, needs_broadcasting
from harness.program import DTYPES, Leaf, Outcome, Program, ProgramError
from harness.specs.expressions import BuiltStep, ExprError, compile_expression
from harness.specs.format import (CASE_KEYS, CONCEPTS, EXPECT_KEYS, Expectations, INITS, INPUT_KEYS,
                                  MAX_ELEMENTS, REQUIRED_CASE_KEYS, SpecCase, SpecError, TOLERANCE_KEYS, UPSTREAM_KEYS, _BOUNDS, _ID,
                                  _NAME, _float64, _generate, _recipe)
from harness.specs.yaml_nodes import (Entries, _Source, _bool, _check_keys, _fmt, _mapping, _nested, _number, _string,
                                      key_errors)

torch = lazy_module("torch", globals())


@dataclass
class ParsedCase:
    """One case as read from a file: its nodes (for tools that edit the file) and the result."""

    node: yaml.Node
    entries: Entries
    case: SpecCase | None
    errors: list[SpecError]
    id: str | None = None
    id_node: yaml.Node | None = None


class _CaseReader:
    def __init__(self, src: _Source, node: yaml.Node, check_expectations: bool) -> None:
        self.src = src
        self.node = node
        self.check_expectations = check_expectations
        self.errors: list[SpecError] = []
        self.entries: Entries = {}
        self.id: str | None = None
        self.id_node: yaml.Node | None = None
        self.counter = 0

    def attempt(self, read: Callable[..., Any], *args: Any) -> Any:
        """Run one independent read; record its error and carry on, so one pass reports them all."""
        try:
            return read(*args)
        except SpecError as exc:
            self.errors.append(exc)
            return None

    def read(self) -> ParsedCase:
        case = self.attempt(self._read)
        self.errors.sort(key=lambda e: (e.line, e.column))
        return ParsedCase(self.node, self.entries, case if not self.errors else None, self.errors, self.id, self.id_node)

    def value(self, key: str) -> yaml.Node | None:
        return self.entries[key][1] if key in self.entries else None

    def _read(self) -> SpecCase | None:
        src = self.src
        self.entries = _mapping(src, self.node, "a case")
        if "id" in self.entries:
            self.attempt(self._id)
        self.errors += key_errors(src, self.node, self.entries, "a case", CASE_KEYS, REQUIRED_CASE_KEYS)
        title = self.attempt(self._line, "title")
        level = self.attempt(self._choice, "level", LEVELS)
        concepts = self.attempt(self._concepts)
        hint = self.attempt(self._line, "hint") if "hint" in self.entries else None
        passes = self.attempt(self._passes)
        hidden = self.attempt(self._hidden)
        tolerance_node = self.value("tolerance")
        leaves = self.attempt(self._inputs)
        upstream = None
        if (node := self.value("upstream")) is not None:
            upstream = self.attempt(self._tensor_input, node, "upstream", UPSTREAM_KEYS)
        if self.errors or leaves is None:
            return None

        scope = {leaf.name: _float64(leaf.value) for leaf in leaves}
        built = self._steps(scope)
        output_node = self.entries["output"][1]
        output, output_steps = self._expression(output_node, "output", scope, name=None, pending=())
        built += output_steps
        if not isinstance(output, str) or output not in {b.step.name for b in built}:
            what = "a number" if not isinstance(output, str) else f"the input {output!r} itself"
            raise src.error(output_node, f"the output must apply at least one op, not just be {what}")
        out_value = scope[output]
        upstream_tensor = None if upstream is None else upstream[0]
        if upstream_tensor is None and out_value.numel() != 1:
            raise src.error(
                output_node,
                f"the output has shape {_fmt(out_value.shape)}: a non-scalar output needs `upstream` "
                "(the gradient passed to backward)",
            )
        if upstream_tensor is not None and tuple(upstream_tensor.shape) != tuple(out_value.shape):
            raise src.error(
                self.value("upstream"),
                f"upstream has shape {_fmt(upstream_tensor.shape)}, but the output has shape {_fmt(out_value.shape)}",
            )
        program = Program(tuple(leaves), tuple(b.step for b in built), output, upstream_tensor, passes or 1,
                          upstream_recipe=None if upstream is None else upstream[2])
        try:
            program.validate()
        except ProgramError as exc:  # the checks above should have caught it; keep the message anyway
            raise src.error(output_node, str(exc)) from None
        self._check_level(level, program, built, leaves)
        expected = self._run_torch(program, output_node)
        tolerance = self._tolerance(tolerance_node, program)
        explicit = None
        if self.check_expectations and (node := self.value("expect")) is not None:
            explicit = self._expectations(node, program, expected, tolerance)
        if self.errors:
            return None
        return SpecCase(
            id=self.id or "",
            title=title,
            level=level,
            concepts=tuple(concepts),
            hint=hint,
            program=program,
            expected=expected,
            explicit=explicit,
            tolerance=tolerance,
            requirements=frozenset(program.requirements()),
            source=Path(src.path),
            line=self.node.start_mark.line + 1,
            hidden=bool(hidden),
        )

    # -- simple keys --

    def _id(self) -> None:
        key, node = self.entries["id"]
        value = _string(self.src, node, "id")
        if not _ID.fullmatch(value):
            raise self.src.error(node, f"id {value!r} may only use lowercase letters, digits, '_', '.' and '-'")
        self.id, self.id_node = value, node

    def _line(self, key: str) -> str | None:
        node = self.value(key)
        if node is None:
            return None
        value = _string(self.src, node, key)
        if not value.strip() or "\n" in value.strip():
            raise self.src.error(node, f"{key} must be one non-empty line")
        return value.strip()

    def _choice(self, key: str, choices: Sequence[str]) -> str | None:
        node = self.value(key)
        if node is None:
            return None
        value = _string(self.src, node, key)
        if value not in choices:
            raise self.src.error(node, f"unknown {key} {value!r}{did_you_mean(value, choices)}; one of: "
                                       f"{', '.join(choices)}")
        return value

    def _concepts(self) -> list[str] | None:
        node = self.value("concepts")
        if node is None:
            return None
        if not isinstance(node, yaml.SequenceNode) or not node.value:
            raise self.src.error(node, f"concepts must be a non-empty list, of: {', '.join(CONCEPTS)}")
        concepts: list[str] = []
        for item in node.value:
            value = _string(self.src, item, "a concept")
            if value not in CONCEPTS:
                raise self.src.error(item, f"unknown concept {value!r}{did_you_mean(value, CONCEPTS)}; one of: "
                                           f"{', '.join(CONCEPTS)}")
            if value in concepts:
                raise self.src.error(item, f"concept {value!r} is listed twice")
            concepts.append(value)
        return concepts

    def _hidden(self) -> bool:
        node = self.value("hidden")
        return False if node is None else _bool(self.src, node, "hidden")

    def _passes(self) -> int | None:
        node = self.value("passes")
        if node is None:
            return None
        value = _number(self.src, node, "passes", integer=True)
        if value not in (1, 2):
            raise self.src.error(node, f"passes must be 1 or 2, got {value}")
        return int(value)

    # -- inputs --

    def _inputs(self) -> list[Leaf] | None:
        node = self.value("inputs")
        if node is None:
            return None
        entries = _mapping(self.src, node, "inputs")
        if not entries:
            raise self.src.error(node, "inputs must name at least one input")
        leaves = []
        for name, (key, value) in entries.items():
            leaf = self.attempt(self._input, name, key, value)
            if leaf is not None:
                leaves.append(leaf)
        return leaves if len(leaves) == len(entries) else None

    def _name(self, name: str, key: yaml.Node, what: str) -> None:
        if not _NAME.fullmatch(name) or keyword.iskeyword(name):
            raise self.src.error(
                key, f"{what} name {name!r} must be a Python identifier starting with a letter (not a keyword)"
            )

    def _input(self, name: str, key: yaml.Node, node: yaml.Node) -> Leaf:
        self._name(name, key, "input")
        what = f"input {name!r}"
        tensor, entries, recipe = self._tensor_input(node, what, INPUT_KEYS)
        floating = tensor.is_floating_point()
        requires_grad = floating
        if "requires_grad" in entries:
            rg_node = entries["requires_grad"][1]
            requires_grad = _bool(self.src, rg_node, f"requires_grad of {what}")
            if requires_grad and not floating:
                raise self.src.error(rg_node, f"{what} is int64 and cannot require grad")
        return Leaf(name, tensor, requires_grad, recipe)

    def _tensor_input(self, node: yaml.Node, what: str,
                      allowed: Sequence[str]) -> tuple[torch.Tensor, Entries, str | None]:
        """A tensor written as ``value`` or as ``shape`` + ``init``, and for the latter the Python that rebuilds it."""
        src = self.src
        entries = _mapping(src, node, what)
        _check_keys(src, node, entries, what, allowed)
        dtype_name = "float64"
        if "dtype" in entries:
            dtype_name = _string(src, entries["dtype"][1], f"dtype of {what}")
            allowed_dtypes = list(DTYPES) if "requires_grad" in allowed else [d for d in DTYPES if d != "int64"]
            if dtype_name not in allowed_dtypes:
                known = "unknown dtype" if dtype_name not in DTYPES else f"{what} cannot have dtype"
                raise src.error(entries["dtype"][1], f"{known} {dtype_name!r}; one of: {', '.join(allowed_dtypes)}")
        if "value" in entries:
            for other in ("shape", "init", "seed", "low", "high", "scale"):
                if other in entries:
                    raise src.error(
                        entries[other][0], f"{what} has an explicit value, so {other!r} does not apply; remove one"
                    )
            integer = dtype_name == "int64"
            data, _ = _nested(src, entries["value"][1], f"the value of {what}", integer=integer)
            return torch.tensor(data, dtype=DTYPES[dtype_name]), entries, None
        if "shape" not in entries:
            raise src.error(node, f"{what} needs either `value` or `shape` (with an optional `init`)")
        shape = self._shape(entries["shape"][1], what)
        init_node = entries["init"][1] if "init" in entries else None
        init = "randn" if init_node is None else _string(src, init_node, f"init of {what}")
        if init not in INITS:
            raise src.error(init_node, f"unknown init {init!r}; one of: {', '.join(INITS)}")
        if init == "randint" and "dtype" not in entries:
            dtype_name = "int64"
        integer = dtype_name == "int64"
        if integer and init in ("randn", "uniform"):
            raise src.error(init_node or entries["dtype"][1], f"init {init} makes floats, but {what} is int64; use randint, ints or a value")
        if init == "randint" and not integer:
            raise src.error(init_node, "init randint makes int64 values; use init ints for whole-number floats")
        low, high = self._bounds(entries, init, what)
        seed = 0
        if "seed" in entries:
            seed = int(_number(src, entries["seed"][1], f"seed of {what}", integer=True))
        scale = None
        if "scale" in entries:
            scale = _number(src, entries["scale"][1], f"scale of {what}", integer=integer)
        value = _generate(init, shape, seed, low, high)
        recipe = _recipe(init, shape, seed, low, high)
        if scale is not None:
            value = value * scale
            recipe = f"({recipe} * {scale!r})"
        return value.to(DTYPES[dtype_name]), entries, f"{recipe}.to(torch.{dtype_name})"

    def _shape(self, node: yaml.Node, what: str) -> tuple[int, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.src.error(node, f"shape of {what} must be a list of sizes, like [2, 3] ([] for a scalar)")
        sizes = []
        for item in node.value:
            size = _number(self.src, item, f"a size in the shape of {what}", integer=True)
            if size < 1:
                raise self.src.error(item, f"sizes must be positive, got {size}")
            sizes.append(int(size))
            if math.prod(sizes) > MAX_ELEMENTS:
                raise self.src.error(node, f"{what} would hold {math.prod(sizes):,} elements or more; a spec tensor "
                                           f"holds at most {MAX_ELEMENTS:,}")
        return tuple(sizes)

    def _bounds(self, entries: Entries, init: str, what: str) -> tuple[Any, Any]:
        low, high = _BOUNDS.get(init, (None, None))
        for bound in ("low", "high"):
            if bound not in entries:
                continue
            key, node = entries[bound]
            if init not in _BOUNDS or (init == "randint" and bound == "low"):
                users = "uniform or ints" if bound == "low" else "uniform, ints or randint"
                raise self.src.error(key, f"{bound!r} only applies to init {users}, not {init}")
            number = _number(self.src, node, f"{bound} of {what}", integer=init != "uniform")
            low, high = (number, high) if bound == "low" else (low, number)
        if init == "randint":
            if high is None:
                raise self.src.error(entries["init"][1], "init randint needs `high` (values lie in [0, high))")
            if high < 1:
                raise self.src.error(entries["high"][1], f"high of randint must be at least 1, got {high}")
        elif init in _BOUNDS and low > high or (init == "uniform" and low == high):
            node = entries["high"][1] if "high" in entries else entries["low"][1]
            raise self.src.error(node, f"{what}: low ({low}) must be below high ({high})")
        return low, high

    # -- steps and the output --

    def _expression(
        self, node: yaml.Node, what: str, scope: dict[str, torch.Tensor], name: str | None, pending: Sequence[str]
    ) -> tuple[Any, list[BuiltStep]]:
        text = _string(self.src, node, what)
        try:
            result, built = compile_expression(text, scope, fresh=self._fresh, name=name, pending=pending)
        except ExprError as exc:
            raise self.src.expression_error(node, exc) from None  # type: ignore[arg-type]
        for b in built:
            scope[b.step.name] = b.value
        return result, built

    def _fresh(self) -> str:
        self.counter += 1
        return f"_{self.counter}"

    def _steps(self, scope: dict[str, torch.Tensor]) -> list[BuiltStep]:
        node = self.value("steps")
        if node is None:
            return []
        entries = _mapping(self.src, node, "steps")
        names = list(entries)
        built: list[BuiltStep] = []
        for i, (name, (key, value)) in enumerate(entries.items()):
            self._name(name, key, "step")
            if name in scope:
                raise self.src.error(key, f"step {name!r} has the same name as an input")
            result, steps = self._expression(value, f"step {name!r}", scope, name, names[i + 1 :])
            if result != name:
                shown = result if isinstance(result, str) else repr(result)
                raise self.src.error(value, f"step {name!r} must apply at least one op, not just name `{shown}`")
            built += steps
        return built

    # -- whole-program checks --

    def _check_level(self, level: str, program: Program, built: list[BuiltStep], leaves: list[Leaf]) -> None:
        declared = LEVELS.index(level)
        needed = LEVELS.index(program.level())
        if needed <= declared:
            return
        scope = {leaf.name: _float64(leaf.value) for leaf in leaves} | {b.step.name: b.value for b in built}
        reasons: list[tuple[int, str]] = []
        for b in built:
            spec = OPS[b.step.op]
            if LEVELS.index(spec.level) > declared:
                reasons.append((LEVELS.index(spec.level), f"the op {spec.name} in `{b.source}` is {spec.level}"))
            operands = [scope[a] if isinstance(a, str) else a for a in b.step.args]
            if needs_broadcasting(spec, operands) and declared < 1:
                reasons.append((1, f"`{b.source}` broadcasts (a followups feature)"))
            if any(not isinstance(a, str) for a in b.step.args) and declared < 2:
                reasons.append((2, f"`{b.source}` has a Python number operand (an extensions feature)"))
        if program.upstream is not None and declared < 1:
            reasons.append((1, "an upstream gradient is a followups feature"))
        if program.passes > 1 and declared < 1:
            reasons.append((1, "two backward passes are a followups feature"))
        because = "; ".join(reason for _, reason in reasons) or f"it needs {', '.join(sorted(program.requirements()))}"
        raise self.src.error(
            self.value("level"), f"level {level} is too low for this case, which needs {LEVELS[needed]}: {because}"
        )

    def _run_torch(self, program: Program, output_node: yaml.Node) -> Outcome:
        try:
            expected = program.run_torch()
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            raise self.src.error(output_node, f"torch cannot run this case: {str(exc).splitlines()[0]}") from None
        if not expected.requires_grad[program.output]:
            raise self.src.error(
                output_node, "the output does not require grad (no input it depends on does), so backward() cannot run"
            )
        if not bool(torch.isfinite(expected.values[program.output]).all()):
            raise self.src.error(output_node, "torch computes a non-finite output (inf or nan) for this case")
        for name, grad in expected.grads.items():
            if grad is not None and not bool(torch.isfinite(grad).all()):
                raise self.src.error(output_node, f"torch computes a non-finite gradient for {name!r}")
        return expected

    def _tolerance(self, node: yaml.Node | None, program: Program) -> Tolerance:
        # float32 inputs are compared at float32 precision; everything else at the project default.
        dtype = "float32" if any(leaf.value.dtype == torch.float32 for leaf in program.leaves) else "float64"
        default = tolerance_for(dtype, any(OPS[s.op].transcendental for s in program.steps))
        if node is None:
            return default
        entries = _mapping(self.src, node, "tolerance")
        _check_keys(self.src, node, entries, "tolerance", TOLERANCE_KEYS)
        values = {"rtol": default.rtol, "atol": default.atol}
        for name, (_, value) in entries.items():
            number = float(_number(self.src, value, name))
            if not math.isfinite(number) or number < 0:
                raise self.src.error(value, f"{name} must be a finite number >= 0, got {number}")
            values[name] = number
        return Tolerance(**values)

    # -- explicit expectations --

    def _expectations(
        self, node: yaml.Node, program: Program, expected: Outcome, tolerance: Tolerance
    ) -> Expectations | None:
        src = self.src
        entries = _mapping(src, node, "expect")
        _check_keys(src, node, entries, "expect", EXPECT_KEYS)
        output = None
        if "output" in entries:
            value_node = entries["output"][1]
            output = self.attempt(self._stated, value_node, "expect.output", False)
            if output is not None:
                self.attempt(
                    self._agree, value_node, "expect.output", output, expected.values[program.output], tolerance, None
                )
        grads: dict[str, torch.Tensor | None] = {}
        if "grads" in entries:
            leaves = {leaf.name: leaf for leaf in program.leaves}
            for name, (key, value_node) in _mapping(src, entries["grads"][1], "expect.grads").items():
                if name not in leaves:
                    raise src.error(key, f"expect.grads names {name!r}, which is not an input; inputs: {', '.join(leaves)}")
                what = f"expect.grads.{name}"
                stated = self.attempt(self._stated, value_node, what, True)
                if stated is not None or _is_null(value_node):
                    grads[name] = stated
                    self.attempt(self._agree, value_node, what, stated, expected.grads[name], tolerance, leaves[name])
        return Expectations(output, grads)

    def _stated(self, node: yaml.Node, what: str, nullable: bool) -> torch.Tensor | None:
        if _is_null(node):
            if nullable:
                return None
            raise self.src.error(node, f"{what} must be a number or nested lists of numbers, not null")
        data, _ = _nested(self.src, node, what, integer=False)
        return torch.tensor(data, dtype=torch.float64)

    def _agree(
        self,
        node: yaml.Node,
        what: str,
        stated: torch.Tensor | None,
        torch_value: torch.Tensor | None,
        tolerance: Tolerance,
        leaf: Leaf | None,
    ) -> None:
        mismatch = compare(stated, torch_value, tolerance, what)
        if mismatch is None:
            return
        if mismatch.kind == "not_none":
            why = "it does not require grad" if leaf is not None and not leaf.requires_grad else "the output does not depend on it"
            raise self.src.error(node, f"{what} states a value, but torch leaves this gradient None ({why}); write null")
        if mismatch.kind == "none":
            shape = _fmt(torch_value.shape)  # type: ignore[union-attr]
            raise self.src.error(node, f"{what} is null, but torch computes a gradient of shape {shape}")
        if mismatch.kind == "shape":
            raise self.src.error(
                node,
                f"{what} has shape {_fmt(stated.shape)}, but torch's result has shape {_fmt(torch_value.shape)}",  # type: ignore[union-attr]
            )
        index = mismatch.index or ()
        where = f"; worst element {list(index)}" if index else ""
        raise self.src.error(
            _element(node, index),
            f"{what} disagrees with torch autograd{where}: the spec says {mismatch.got:.10g}, "
            f"torch computes {mismatch.expected:.10g} ({tolerance.describe()})",
        )


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _element(node: yaml.Node, index: Sequence[int]) -> yaml.Node:
    """The node of one element of nested lists, to point at the worst one."""
    for i in index:
        if not isinstance(node, yaml.SequenceNode) or i >= len(node.value):
            break
        node = node.value[i]
    return node
