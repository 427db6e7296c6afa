"""A module named lazily is imported on first use, then stands in its own name."""

import sys

from harness.lazy_modules import lazy_module


def test_the_module_is_imported_when_first_read_and_then_replaces_its_stand_in(tmp_path, monkeypatch):
    (tmp_path / "deferred_probe.py").write_text("VALUE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "deferred_probe", raising=False)
    namespace: dict = {}
    namespace["probe"] = lazy_module("deferred_probe", namespace, "probe")
    assert "deferred_probe" not in sys.modules
    assert namespace["probe"].VALUE == 3
    assert namespace["probe"] is sys.modules["deferred_probe"]
    monkeypatch.delitem(sys.modules, "deferred_probe")


def test_a_stand_in_bound_elsewhere_is_left_alone():
    namespace = {"json": "something else"}
    stand_in = lazy_module("json", namespace)
    assert stand_in.dumps([1]) == "[1]"
    assert namespace["json"] == "something else"
