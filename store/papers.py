"""The five papers, by their file under shared/papers: title, authors, venue, the page that
says what reproduced, and the experiments that judge their claims.  Cited by title, not
only by file name.  The titles and venues are the papers' own where their text gives them;
the GRIN text starts at its abstract, so its title and venue are the published paper's."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    file: str
    nick: str                      # what the tables call it
    title: str
    venue: str
    page: str                      # docs/results/<page>
    experiments: tuple[str, ...]

    @property
    def short(self) -> str:
        """'000 Jellyfish vs fat tree'."""
        return f"{self.file[:3]} {self.nick}"


PAPERS: dict[str, Paper] = {p.file: p for p in (
    Paper("000_b87022286e416fdf.txt", "Jellyfish vs fat tree",
          "Fairness of Jellyfish vs. Fat-Tree",
          "C. Nguyen and C. Chong, a CS244 (Stanford) reproduction of Fig. 2 of 'Jellyfish: "
          "Networking Data Centers Randomly' (Singla et al., NSDI 2012)",
          "000-permutation-fairness.md", ("fairness", "permutation")),
    Paper("001_da816e6d87c9a0a9.txt", "Orca multicast",
          "Orca End-to-end Evaluations",
          "P. Yassini, an evaluation report (May 2020, unpublished)", "001-orca.md",
          ("orca",)),
    Paper("002_b94e7e7e77304abe.txt", "TCP Outcast",
          "Exploring Outcast",
          "R. Walsh and E. Topalovic, a CS244 (Stanford) reproduction of Fig. 2 of 'Exposing "
          "Unfairness in Data Center Networks' (Prakash et al., NSDI 2012)", "002-outcast.md",
          ("outcast", "outcast-fattree")),
    Paper("003_aa7e1801a46c453f.txt", "GRIN",
          "Increasing Datacenter Network Utilisation with GRIN",
          "A. Agache, R. Deaconescu and C. Raiciu, USENIX NSDI 2015", "003-grin.md",
          ("grin",)),
    Paper("004_a477753408ad7b79.txt", "Packet spraying",
          "On the Efficacy of Fine-Grained Traffic Splitting Protocols in Data Center "
          "Networks", "A. Dixit, P. Prakash and R. R. Kompella, ACM SIGCOMM 2011 (poster)",
          "004-plts.md", ("plts",)),
)}


def of_source(source: str) -> Paper | None:
    """The paper a claim's source ('<file>, Fig. 4') cites; None for an unknown file."""
    return PAPERS.get(source.split(",")[0].strip())
