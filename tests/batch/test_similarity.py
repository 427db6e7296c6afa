"""Similarity: blind to names, comments, strings and layout; the template shared by all is left out."""

from pathlib import Path

from harness.batch.similarity import normalised_tokens, similar_pairs

ROOT = Path(__file__).resolve().parents[2]
ENGINE = (ROOT / "tests" / "solutions" / "overwrite_grad.py").read_text()


def test_names_comments_strings_and_layout_do_not_count():
    assert normalised_tokens("total = grad + 2  # add\n") == normalised_tokens('s=g+7\n')
    assert normalised_tokens('x = "a" "b"\ny = """doc"""\n') == ["N", "=", "S", "N", "=", "S"]
    assert normalised_tokens("def f(:\n") == ["def", "N", "(", ":"]  # stops at the error, keeps what it read


def test_a_disguised_copy_is_found_and_an_independent_engine_is_not():
    disguised = "# my own work\n" + ENGINE.replace("grad", "gradient").replace("self", "me").replace("    ", "\t")
    independent = (ROOT / "reference" / "engine.py").read_text()
    pairs = similar_pairs({"orig": ENGINE, "copy": disguised, "ref": independent})
    assert [(p["a"], p["b"], p["score"]) for p in pairs] == [("copy", "orig", 1.0)]


def test_the_template_is_not_evidence():
    template = (ROOT / "candidate_template" / "solution.py").read_text()
    assert similar_pairs({"a": template, "b": template}) == []
    assert similar_pairs({"a": template + ENGINE, "b": template + "x = 1\n"}, threshold=0.0) == []


def test_score_is_the_share_of_ngrams_in_common():
    # N = N + N - N * N / N % N // N ** N: 17 tokens, 10 distinct 8-grams;
    # its first 11 tokens hold 4 of them, so the pair shares 4 of 10.
    long = "a = b + c - d * e / f % g // h ** i\n"
    short = "a = b + c - d * e / f\n"
    assert similar_pairs({"a": long, "b": short}, threshold=0.0, base=()) == [
        {"a": "a", "b": "b", "score": 0.4, "shared": 4}]
