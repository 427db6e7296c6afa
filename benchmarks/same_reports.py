"""Behaviour guard for pure moves: the JSON reports of a sample of submissions, before and after.

    python benchmarks/same_reports.py save TREE OUT     # grade the sample with the code in TREE
    python benchmarks/same_reports.py compare OLD NEW   # byte-for-byte, timings removed
    python benchmarks/same_reports.py save TREE OUT closes_socket hostile_memory   # only these files

The sample is every tests/solutions/*.py and the first five files of each tests/corpus folder
at level core, plus a few files at every level. Before comparing, timings (the "timings" table and every "seconds")
are removed and the tree's own path (in reproduction snippets) reads <tree>: a restructuring
that changes any other byte of a report changed behaviour.
"""
import json
import subprocess
import sys
from pathlib import Path

ALL_LEVELS = ["tests/solutions/full_correct.py", "tests/solutions/relu_grad_at_zero.py",
              "tests/solutions/cheat_autograd_grad.py"]
PER_CORPUS_FOLDER = 5   # the first few of each tests/corpus folder keep a run under ten minutes


def sample(tree: Path) -> list[tuple[str, str]]:
    files = sorted(str(p.relative_to(tree)) for p in tree.glob("tests/solutions/*.py"))
    for folder in sorted(tree.glob("tests/corpus/*/")):
        files += sorted(str(p.relative_to(tree)) for p in folder.glob("*.py"))[:PER_CORPUS_FOLDER]
    runs = [(f, "core") for f in files]
    runs += [(f, "all") for f in ALL_LEVELS if (tree / f).exists()]
    return runs


TIMING_KEYS = ("seconds", "timings")


def strip_timings(value):
    if isinstance(value, dict):
        return {k: strip_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [strip_timings(v) for v in value]
    return value


def normalized(code: int, stdout: str, stderr: str, tree: Path) -> str:
    stdout, stderr = stdout.replace(str(tree), "<tree>"), stderr.replace(str(tree), "<tree>")
    try:
        body = json.dumps(strip_timings(json.loads(stdout)), indent=2, sort_keys=True)
    except ValueError:
        body = "unparsed stdout:\n" + stdout
    return f"exit {code}\n{body}\nstderr:\n{stderr}"


def save(tree: Path, out: Path, only: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, level in sample(tree):
        if only and not any(word in name for word in only):
            continue
        done = subprocess.run([sys.executable, "-m", "harness.cli", name, "--format", "json",
                               "--level", level], cwd=tree, capture_output=True, text=True)
        key = name.replace("/", "__") + f".{level}.json"
        (out / key).write_text(normalized(done.returncode, done.stdout, done.stderr, tree))
        print(key, done.returncode, flush=True)


def compare(old: Path, new: Path) -> int:
    """Every report of OLD against NEW; a report only one of them holds differs."""
    names = sorted({p.name for p in old.iterdir()} | {p.name for p in new.iterdir()})
    differ = [n for n in names
              if not (old / n).exists() or not (new / n).exists()
              or (old / n).read_bytes() != (new / n).read_bytes()]
    for n in differ:
        print("differs:", n)
    print(f"{len(names) - len(differ)} of {len(names)} reports identical")
    return 1 if differ else 0


if __name__ == "__main__":
    mode, a, b = sys.argv[1:4]
    if mode == "save":
        save(Path(a).resolve(), Path(b), sys.argv[4:])
    else:
        sys.exit(compare(Path(a), Path(b)))
