"""What a worker may say: a strict schema for every message it sends the grader.

A worker runs the candidate's code, so its messages are hostile input. Each
reply is checked against the schema of the request it answers (types, lengths,
bounded numbers, tensors whose value count matches their shape) before any
other code of the grader reads it. A message that does not fit is the
candidate's error on that check (``SchemaError``), never the grader's crash.
Requests the schema does not know in detail still get the generic bounds.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Final, Mapping

__all__ = ["SchemaError", "validate_hello", "validate_reply"]

MAX_TEXT: Final = 4000
MAX_NAME: Final = 200
MAX_ELEMENTS: Final = 1_000_000
MAX_DIMS: Final = 8
MAX_INT: Final = 2**63
MAX_DEPTH: Final = 8

Validator = Callable[[Any, str], None]


class SchemaError(ValueError):
    """A worker's message that does not fit its schema."""


def _fail(where: str, what: str) -> None:
    raise SchemaError(f"{where}: {what}")


# ---- leaves -----------------------------------------------------------------------------


def _text(limit: int = MAX_TEXT) -> Validator:
    def validate(value: Any, where: str) -> None:
        if not isinstance(value, str):
            _fail(where, f"expected text, got {type(value).__name__}")
        if len(value) > limit:
            _fail(where, f"text of {len(value)} characters (at most {limit})")

    return validate


def _boolean(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        _fail(where, f"expected true or false, got {type(value).__name__}")


def _number(value: Any, where: str) -> None:
    # bool is an int in Python; a worker saying `true` for a number is malformed.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(where, f"expected a number, got {type(value).__name__}")
    if isinstance(value, int) and abs(value) >= MAX_INT:
        _fail(where, "an integer out of range")


def _seconds(value: Any, where: str) -> None:
    _number(value, where)
    if not (math.isfinite(value) and value >= 0):
        _fail(where, "a time must be a finite number of seconds")


def _count(value: Any, where: str) -> None:
    _number(value, where)
    if not isinstance(value, int) or not 0 <= value <= MAX_ELEMENTS:
        _fail(where, "expected a small non-negative integer")


def _list(item: Validator, limit: int) -> Validator:
    def validate(value: Any, where: str) -> None:
        if not isinstance(value, list):
            _fail(where, f"expected a list, got {type(value).__name__}")
        if len(value) > limit:
            _fail(where, f"a list of {len(value)} items (at most {limit})")
        for i, element in enumerate(value):
            item(element, f"{where}[{i}]")

    return validate


def _literal(expected: str) -> Validator:
    def validate(value: Any, where: str) -> None:
        if value != expected:
            _fail(where, f"expected {expected!r}")

    return validate


def _optional(inner: Validator) -> Validator:
    def validate(value: Any, where: str) -> None:
        if value is not None:
            inner(value, where)

    return validate


def _either(*options: Validator) -> Validator:
    def validate(value: Any, where: str) -> None:
        errors = []
        for option in options:
            try:
                option(value, where)
                return
            except SchemaError as exc:
                errors.append(str(exc))
        raise SchemaError(errors[0] if len(errors) == 1 else f"{where}: fits none of the allowed forms")

    return validate


def _record(required: Mapping[str, Validator], optional: Mapping[str, Validator] = {}) -> Validator:
    def validate(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            _fail(where, f"expected an object, got {type(value).__name__}")
        for key in value:
            if key not in required and key not in optional:
                _fail(where, f"unexpected field {str(key)[:40]!r}")
        for key, inner in required.items():
            if key not in value:
                _fail(where, f"missing field {key!r}")
            inner(value[key], f"{where}.{key}")
        for key, inner in optional.items():
            if key in value:
                inner(value[key], f"{where}.{key}")

    return validate


def _mapping(item: Validator, limit: int = 10_000) -> Validator:
    def validate(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            _fail(where, f"expected an object, got {type(value).__name__}")
        if len(value) > limit:
            _fail(where, f"an object with {len(value)} fields (at most {limit})")
        for key, element in value.items():
            if len(key) > MAX_NAME:
                _fail(where, "a field name that is too long")
            item(element, f"{where}.{key}")

    return validate


# ---- the shapes of worker data -------------------------------------------------------------


def _tensor(value: Any, where: str) -> None:
    _record({"shape": _list(_count, MAX_DIMS), "dtype": _text(20), "values": _list(_number, MAX_ELEMENTS)},
            {"autograd": _boolean, "subclass": _text(MAX_NAME)})(value, where)
    expected = math.prod(value["shape"])
    if expected != len(value["values"]):
        _fail(where, f"shape {value['shape']} needs {expected} values, got {len(value['values'])}")
    if value["dtype"] in _INTEGER_DTYPES and not all(isinstance(v, int) for v in value["values"]):
        _fail(where, f"{value['dtype']} values that are not integers")


_INTEGER_DTYPES: Final = ("int64",)
"""dtypes the grader decodes as integers (``program.DTYPES``): NaN, infinities or fractions cannot be one."""


_DESCRIPTION: Final = _record({"not_tensor": _text(MAX_NAME)})
_OBSERVED: Final = _optional(_either(_tensor, _DESCRIPTION))
_FLAG: Final = _optional(_either(_boolean, _text(MAX_NAME)))
_ERROR: Final = _record({"where": _text(MAX_NAME), "type": _text(MAX_NAME), "message": _text(),
                         "frames": _list(_text(MAX_TEXT), 20)},
                        {"node": _text(MAX_TEXT), "line": _optional(_count), "source_line": _text(MAX_TEXT),
                         "returned": _text(MAX_NAME)})
_VIOLATIONS: Final = _list(_text(MAX_TEXT), 50)
_REVIEW: Final = _list(_record({"construct": _text(MAX_TEXT), "why": _text(MAX_TEXT)}, {"line": _optional(_count)}), 50)

_HELLO: Final = _either(
    _record({"kind": _literal("ready"), "has_class": _boolean, "violations": _VIOLATIONS},
            {"members": _list(_text(MAX_NAME), 200), "features": _mapping(_boolean, 50), "review": _REVIEW,
             "graph_nodes": _count}),
    _record({"kind": _literal("import_error"), "error": _ERROR},
            {"violations": _VIOLATIONS, "review": _REVIEW, "graph_nodes": _count}),
)

_RAN: Final = _list(_list(_either(_text(MAX_NAME), _count), 2), 2000)
"""The submission's functions that ran since the last reply, as ``[name, first line]``."""
_COMMON: Final = {"violations": _VIOLATIONS, "error": _ERROR, "review": _REVIEW, "ran": _RAN, "graph_nodes": _count}
"""``graph_nodes``: how many graph nodes torch's autograd recorded in the worker's main thread since the
submission was imported (read from torch by the worker's own loop, which the submission never calls)."""

_REPLIES: Final[dict[str, Validator]] = {
    "run": _record({}, {**_COMMON, "values": _mapping(_OBSERVED), "requires_grad": _mapping(_FLAG),
                        "grads": _mapping(_OBSERVED), "leaf_data": _mapping(_OBSERVED), "seconds": _seconds,
                        "backward_seconds": _seconds,
                        "mutated": _list(_record({"step": _text(MAX_NAME), "slot": _count}), 200)}),
    "deep_chain": _record({}, {**_COMMON, "grad": _OBSERVED, "backward_seconds": _seconds}),
    "memory_release": _record({}, {**_COMMON, "alive_before": _count, "alive_after": _count, "grad_x": _OBSERVED,
                                   "x": _tensor, "w": _tensor}),
    "no_grad": _record({}, {**_COMMON, "h_requires_grad": _FLAG, "z_requires_grad": _FLAG, "z_value": _OBSERVED,
                            "intermediate_freed": _boolean, "after_requires_grad": _FLAG,
                            "nested_requires_grad": _FLAG, "after_exception_requires_grad": _FLAG}),
}


_REPLIES["trace_calls"] = _record({}, _COMMON)


def _bytes(value: Any, where: str) -> None:
    _number(value, where)
    if not isinstance(value, int) or not 0 <= value < 2**48:
        _fail(where, "expected a byte count")


_KEPT: Final = _record({"node": _text(MAX_NAME), "bytes": _bytes, "dtype": _text(20), "shape": _list(_count, MAX_DIMS)})
_REPLIES["saved_tensors"] = _record({}, {
    **_COMMON,
    "cases": _list(_either(_record({"kept": _list(_KEPT, 200), "truncated": _boolean}), _record({"error": _ERROR})),
                   32),
    "in_place": _record({"w_before": _tensor}, {"w_after": _OBSERVED, "grad_x": _OBSERVED, "error": _ERROR}),
})
_REPLIES["timed_run"] = _REPLIES["run"]  # a run with the collector paused: the same facts
_REPLIES["run_many"] = _record({"results": _list(_REPLIES["run"], 1000)}, _COMMON)
_REPLIES["backward_cost"] = _record({}, {**_COMMON, "sizes": _list(_number, 100), "calls": _list(_number, 100),
                                         "elements": _list(_number, 100), "py_calls": _list(_number, 100),
                                         "complex": _boolean})


def _generic(value: Any, where: str, depth: int = 0) -> None:
    """Bounds every message must respect, whatever it answers."""
    if depth > MAX_DEPTH:
        _fail(where, "nested too deeply")
    if isinstance(value, dict):
        for key, element in value.items():
            if len(key) > MAX_NAME:
                _fail(where, "a field name that is too long")
            _generic(element, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, element in enumerate(value):
            if isinstance(element, (dict, list)):
                _generic(element, f"{where}[{i}]", depth + 1)
            elif isinstance(element, str):
                _text()(element, f"{where}[{i}]")
            elif isinstance(element, int) and not isinstance(element, bool) and abs(element) >= MAX_INT:
                _fail(f"{where}[{i}]", "an integer out of range")
    elif isinstance(value, str):
        _text()(value, where)
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= MAX_INT:
        _fail(where, "an integer out of range")


def validate_hello(message: Any) -> dict[str, Any]:
    """The worker's first message, checked: it has imported the submission, or failed to."""
    _generic(message, "hello")
    _HELLO(message, "hello")
    return message


# What a reply without an error always holds: the evaluator reports every fact it was asked for,
# so a missing one is a forged reply, never "nothing to see" that a check could take for a pass.
_COMPLETE: Final[dict[str, tuple[str, ...]]] = {
    "run": ("values", "requires_grad", "grads", "leaf_data", "seconds"),
    "timed_run": ("values", "requires_grad", "grads", "leaf_data", "seconds"),
    "run_many": ("results",),
    "deep_chain": ("grad", "backward_seconds"),
    "memory_release": ("alive_before", "alive_after", "grad_x", "x", "w"),
    "saved_tensors": ("cases", "in_place"),
    "no_grad": ("h_requires_grad", "z_requires_grad", "z_value", "intermediate_freed", "after_requires_grad",
                "after_exception_requires_grad"),
}


def validate_reply(kind: str, message: Any, request: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A reply to a request of ``kind``, checked against that kind's schema (and against ``request``)."""
    if not isinstance(message, dict):
        _fail("reply", f"expected an object, got {type(message).__name__}")
    _generic(message, "reply")
    schema = _REPLIES.get(kind)
    if schema is not None:
        schema(message, "reply")
    elif "error" in message:
        _ERROR(message["error"], "reply.error")
    if "violations" in message:
        _VIOLATIONS(message["violations"], "reply.violations")
    if "review" in message:
        _REVIEW(message["review"], "reply.review")
    if "error" not in message:
        for key in _COMPLETE.get(kind, ()):
            if key not in message:
                _fail("reply", f"missing field {key!r}")
        if kind in ("run", "timed_run") and request is not None:
            _run_complete(message, request.get("program"), request.get("observe", "all"))
        if kind == "run_many" and request is not None:
            programs = request.get("programs") or []
            results = message["results"]
            if len(results) != len(programs):
                _fail("reply.results", f"{len(results)} results for {len(programs)} graphs")
            for i, (result, program) in enumerate(zip(results, programs)):
                if "error" not in result:
                    for key in _COMPLETE["run"]:
                        if key not in result:
                            _fail(f"reply.results[{i}]", f"missing field {key!r}")
                    _run_complete(result, program, request.get("observe", "all"))
    return message


def _run_complete(message: dict[str, Any], program: Any, observe: Any) -> None:
    """A run without an error reports every node it was asked about and every float leaf."""
    if not isinstance(program, dict):
        return
    steps = [s.get("name") for s in program.get("steps", []) if isinstance(s, dict)]
    names = steps if observe == "all" else [program.get("output")]
    leaves = [w.get("name") for w in program.get("leaves", []) if isinstance(w, dict) and w.get("dtype") != "int64"]
    for field, wanted in (("values", names), ("requires_grad", names), ("grads", leaves), ("leaf_data", leaves)):
        missing = [str(name) for name in wanted if name not in message[field]]
        if missing:
            _fail(f"reply.{field}", f"nothing reported for {', '.join(missing[:5])[:200]}")
