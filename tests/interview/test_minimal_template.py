"""`grade init --minimal`: the interface as the interview states it, and nothing that gives an answer away."""

import importlib.util
from pathlib import Path

from click.testing import CliRunner

import candidate_template  # noqa: F401  -- imported from this checkout before the CLI drops the working folder
from harness.checks.targeted import CORE_MEMBERS
from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
GIVEAWAYS = ("accumulat", "topolog", "+=", "sum of", "contribution", "reverse order", "shape", "broadcast",
             "no_grad", "<= 0", "recursion", "visited")
"""Words of the full template's docstrings and comments that tell how to solve the task."""


def test_init_minimal_writes_the_bare_interface(tmp_path):
    target = tmp_path / "solution.py"
    result = CliRunner().invoke(main, ["init", str(target), "--minimal"])
    assert result.exit_code == 0, result.output
    text = target.read_text()
    assert text == (ROOT / "candidate_template" / "minimal.py").read_text()
    lowered = text.lower()
    assert [word for word in GIVEAWAYS if word in lowered] == []
    full = (ROOT / "candidate_template" / "solution.py").read_text().lower()
    assert [word for word in GIVEAWAYS if word in full]  # the words are the full template's, so the test can fail


def test_the_minimal_template_has_every_core_member_and_nothing_more(tmp_path):
    spec = importlib.util.spec_from_file_location("minimal_template", ROOT / "candidate_template" / "minimal.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    own = {name for name in vars(module.Tensor) if not name.startswith("__") or name in CORE_MEMBERS}
    assert own == set(CORE_MEMBERS)
    import torch

    t = module.Tensor(torch.ones(2), requires_grad=True)
    assert (t.requires_grad, t.grad) == (True, None)


def test_init_minimal_refuses_to_overwrite(tmp_path):
    target = tmp_path / "solution.py"
    target.write_text("mine\n")
    result = CliRunner().invoke(main, ["init", str(target), "--minimal"])
    assert result.exit_code == 2 and target.read_text() == "mine\n"
