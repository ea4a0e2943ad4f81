"""A node's fact file cut into its sections: the whole-text reading (files broken by "\n"
alone, which collect.yml writes) gives what the line-by-line reading gives, on random
files and on the corpus' real reports put in a file."""

from __future__ import annotations

from random import Random

import pytest

from clustergen.commands.audit import facts as facts_module
from clustergen.commands.audit.facts import NodeFacts, parse_facts

from support.paths import DATA, REPO

PIECES = [
    "#### clustergen-section ibstat rc=0",
    "#### clustergen-section ibstat rc=255  \t",
    "#### clustergen-section slurmd-C absent",
    "#### clustergen-section nvidia-smi-q-x rc=0\x1f",
    "#### clustergen-section  bad rc=0",
    "#### clustergen-section lnet rc=x",
    "#### clustergen-sectionX rc=0",
    " #### clustergen-section ibstat rc=0",
    "#### clustergen-facts 1 host=gpu01",
    "CA 'mlx5_0'",
    "\tPort 1:",
    "",
    "  ",
    "State: Active\xa0",
]


def _both(text: str) -> tuple[NodeFacts, NodeFacts]:
    by_text, by_lines = NodeFacts("n", "n.txt"), NodeFacts("n", "n.txt")
    facts_module._sections_of_text(by_text, text)
    facts_module._sections_of_lines(by_lines, text)
    return by_text, by_lines


@pytest.mark.parametrize("seed", range(200))
def test_cutting_the_text_is_reading_it_line_by_line(seed: int) -> None:
    random = Random(seed)
    lines = [random.choice(PIECES) for _ in range(random.randrange(0, 12))]
    text = "\n".join(lines) + random.choice(["", "\n", "\n\n"])
    by_text, by_lines = _both(text)
    assert by_text.sections == by_lines.sections, text


def test_the_corpus_reports_in_one_file_are_cut_as_read() -> None:
    corpus = REPO / "tests" / "corpus" / "tools"
    reports = sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix != ".SOURCE")
    reports += sorted(p for p in (DATA / "audit").rglob("*.txt"))
    assert len(reports) >= 30
    text = "#### clustergen-facts 1 host=gpu01\n" + "".join(
        f"#### clustergen-section {p.name} rc=0\n{p.read_text(errors='replace').rstrip()}\n"
        for p in reports
        if facts_module._OTHER_BREAKS.search(p.read_text(errors="replace")) is None
    )
    by_text, by_lines = _both(text)
    assert len(by_text.sections) >= 20 and by_text.sections == by_lines.sections


def test_a_file_with_other_line_breaks_is_read_line_by_line() -> None:
    text = "#### clustergen-facts 1 host=gpu07\r\n#### clustergen-section ibstat rc=0\r\nCA 'x'\r\n"
    facts = parse_facts(text, "facts/other.txt")
    assert facts.node == "gpu07"
    assert facts.sections["ibstat"].text == "CA 'x'\n" and facts.sections["ibstat"].line == 2
