"""The five papers, by their file under shared/papers: title, authors, venue, the page that
says what reproduced, and the experiments that judge their claims.  Cited by title, not
only by file name.  The titles and venues are the papers' own where their text gives them;
the GRIN text starts at its abstract, so its title and venue are the published paper's."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Condition:
    """One condition of the paper's set-up beside ours.  Ours is read from the parameters
    (config.json) of the run that judged ``experiment``'s headlines, never typed here."""
    what: str                      # 'link rate'
    paper: str                     # the paper's own value, or why there is none
    experiment: str                # whose judged run the value comes from
    param: str                     # the config.json parameter
    unit: str = ""
    #: the paper's value(s) as numbers in ``unit`` (a range: its ends), where it gives any:
    #: a run's scale against the paper is ours over these (``scale``)
    numbers: tuple[float, ...] = ()


@dataclass(frozen=True)
class Figure:
    """A figure of the run that judged ``experiment``'s headlines, shown on the paper's
    page and in the gallery."""
    experiment: str
    name: str                      # the file in that run folder
    caption: str


@dataclass(frozen=True)
class Paper:
    file: str
    nick: str                      # what the tables call it
    title: str
    venue: str
    page: str                      # docs/results/<page>, generated (analysis/pages.py)
    experiments: tuple[str, ...]
    #: what the paper claims and how dcrepro tests it, in two or three sentences (no number
    #: of ours: those the page reads from the runs)
    summary: str = ""
    conditions: tuple[Condition, ...] = ()
    figures: tuple[Figure, ...] = ()
    #: what the paper shows that no claim judges here, and why (one line each)
    unjudged: tuple[str, ...] = ()

    @property
    def notebook(self) -> str:
        """docs/notebook/<page>: how it was built, dated criteria and investigations."""
        return self.page

    @property
    def short(self) -> str:
        """'000 Jellyfish vs fat tree'."""
        return f"{self.file[:3]} {self.nick}"


PAPERS: dict[str, Paper] = {p.file: p for p in (
    Paper("000_b87022286e416fdf.txt", "Jellyfish vs fat tree",
          "Fairness of Jellyfish vs. Fat-Tree",
          "C. Nguyen and C. Chong, a CS244 (Stanford) reproduction of Fig. 2 of 'Jellyfish: "
          "Networking Data Centers Randomly' (Singla et al., NSDI 2012)",
          "000-permutation-fairness.md", ("fairness", "permutation"),
          summary="The write-up reruns Jellyfish's Fig. 2 in Mininet: under MPTCP a random "
                  "graph with k-shortest-path routing shares throughput about as fairly as "
                  "a fat tree with ECMP, and MPTCP beats single-path TCP on the fat tree. "
                  "`permutation` measures TCP against MPTCP on the k=4 fat tree (the "
                  "write-up gives no ratio; htsim's 1.5x comes from the MPTCP paper), "
                  "`fairness` the two topologies' flows rank by rank.",
          conditions=(
              Condition("link rate", "15 Mb/s", "fairness", "bw", "Mb/s", (15.0,)),
              Condition("flow duration", "60 s", "fairness", "duration", "s", (60.0,)),
              Condition("trimmed at each end", "5 s", "fairness", "trim", "s", (5.0,)),
              Condition("fat tree", "k=4, 16 hosts", "fairness", "fattree"),
              Condition("Jellyfish", "16 hosts (switches not stated)", "fairness",
                        "jellyfish"),
              Condition("MPTCP subflows", "8 (mptcp_ndiffports)", "fairness", "subflows"),
              Condition("congestion control", "not stated (the MPTCP kernel's default)",
                        "fairness", "cc"),
              Condition("repetitions", "not stated", "fairness", "runs"),
              Condition("repetitions, TCP vs MPTCP", "not stated", "permutation", "runs"),
          ),
          figures=(
              Figure("fairness", "rank.png",
                     "normalized throughput by rank, Jellyfish + k-shortest paths against "
                     "the fat tree + ECMP (the write-up's Fig. 6)"),
              Figure("permutation", "rank.png",
                     "TCP against MPTCP on the k=4 fat tree, flows by rank"),
          )),
    Paper("001_da816e6d87c9a0a9.txt", "Orca multicast",
          "Orca End-to-end Evaluations",
          "P. Yassini, an evaluation report (May 2020, unpublished)", "001-orca.md",
          ("orca",),
          summary="Orca replicates a file to every receiver in the switches: the sender "
                  "puts one copy on its link instead of one per receiver.  The report "
                  "measures 4.16x over unicast at its largest workload (Fig. 5) and 85 % "
                  "better with one sending process per receiver (Fig. 8), with a sender "
                  "that is CPU-bound; `orca` caps the sender's CPU (--sender-cpu) to reach "
                  "that regime, since an uncapped sender here is bound by its link.",
          conditions=(
              Condition("link rate", "10 Gb/s NICs", "orca", "bw", "Mb/s", (10000.0,)),
              Condition("receivers", "the computation nodes (count not stated)", "orca",
                        "members"),
              Condition("workload multiplier", "x1 to x16 (88 MB to 1.4 GB)", "orca",
                        "workloads"),
              Condition("sending processes", "1 per receiver and fewer", "orca", "procs"),
              Condition("sender CPU cap (cores a process)", "none: a CPU-bound sender",
                        "orca", "sender_cpu"),
              Condition("repetitions", "not stated", "orca", "runs"),
          ),
          figures=(
              Figure("orca", "procs.png",
                     "unicast with 1, 2 and 4 sending processes against multicast, per "
                     "sender CPU cap (the report's Fig. 8)"),
              Figure("orca", "exec_time.png",
                     "execution time by workload, multicast against unicast (Fig. 5)"),
          ),
          unjudged=(
              "Figs. 6 and 7, the CDFs of send and wait times: the report describes them "
              "but states no result in words, so there is no criterion to judge; `orca` "
              "draws both (send_cdf.png, wait_cdf.png) in every run.",
          )),
    Paper("002_b94e7e7e77304abe.txt", "TCP Outcast",
          "Exploring Outcast",
          "R. Walsh and E. Topalovic, a CS244 (Stanford) reproduction of Fig. 2 of 'Exposing "
          "Unfairness in Data Center Networks' (Prakash et al., NSDI 2012)", "002-outcast.md",
          ("outcast", "outcast-fattree"),
          summary="A flow that enters a tail-drop switch on a port of its own loses to the "
                  "N flows entering on another port towards the same output: the TCP "
                  "Outcast.  `outcast` builds the write-up's two-port set-up with N = 2, 6 "
                  "and 12; `outcast-fattree` its k=4 fat tree, 15 senders to one receiver, "
                  "under spanning-tree and hashed routing.",
          conditions=(
              Condition("link rate", "not stated", "outcast", "bw", "Mb/s"),
              Condition("queue (packets, tail drop)", "tail drop, size not stated",
                        "outcast", "queue"),
              Condition("competing flows N", "2, 6, 12 (Fig. 4)", "outcast", "flows"),
              Condition("congestion control", "not stated", "outcast", "cc"),
              Condition("repetitions", "not stated", "outcast", "runs"),
              Condition("fat tree", "k=4, 15 senders to one receiver", "outcast-fattree",
                        "topo"),
              Condition("repetitions, fat tree", "not stated", "outcast-fattree", "runs"),
          ),
          figures=(
              Figure("outcast", "outcast_share.png",
                     "the lone flow's share of its fair share against N (the write-up's "
                     "Fig. 4)"),
              Figure("outcast-fattree", "fattree_outcast_runs.png",
                     "local against remote senders per repetition, spanning tree"),
          ),
          unjudged=(
              "Fig. 4 at N = 2 on its own: the write-up claims the trend only, judged by the "
              "supporting claim that the lone flow's share falls as N grows.",
              "The fat tree under ECMP (`outcast-fattree --routing ecmp`): run and drawn, "
              "but the write-up's words are about spanning-tree and hashed routing, which "
              "the two headlines judge.",
          )),
    Paper("003_aa7e1801a46c453f.txt", "GRIN",
          "Increasing Datacenter Network Utilisation with GRIN",
          "A. Agache, R. Deaconescu and C. Raiciu, USENIX NSDI 2015", "003-grin.md",
          ("grin", "grin-hops"),
          summary="GRIN wires each server's free port to a neighbour's, so a server can "
                  "borrow an idle neighbour's uplink over MPTCP.  Fig. 7 (all-to-all "
                  "traffic) has GRIN1 close to 2x and GRIN2 close to 3x the original "
                  "network when few servers are active; `grin` builds the racks, the GRIN "
                  "wiring and h1 routing, and runs MPTCP between the active servers.  "
                  "Section 5.1 finds h1 routing within 7 % of the maximum multi-commodity "
                  "flow on average; `grin-hops` solves that study in the flow model.",
          conditions=(
              Condition("link rate", "1 and 10 Gb/s", "grin", "bw", "Mb/s",
                        (1000.0, 10000.0)),
              Condition("racks", "not stated for Fig. 7", "grin", "racks"),
              Condition("servers a rack", "not stated for Fig. 7", "grin", "servers"),
              Condition("traffic", "all-to-all (Fig. 7)", "grin", "pattern"),
              Condition("active servers (%)", "10 % to 100 %", "grin", "active"),
              Condition("repetitions", "not stated", "grin", "runs"),
              Condition("racks, section 5.1", "6", "grin-hops", "racks"),
              Condition("servers a rack, section 5.1", "20", "grin-hops", "servers"),
              Condition("GRIN degrees, section 5.1", "1 to 6", "grin-hops", "degrees"),
              Condition("active servers (%), section 5.1", "not stated", "grin-hops",
                        "active"),
              Condition("seeds, section 5.1", "not stated", "grin-hops", "seeds"),
              Condition("first seed, section 5.1", "- (ours: fresh seeds from 101)",
                        "grin-hops", "seed"),
          ),
          figures=(
              Figure("grin", "throughput.png",
                     "per-connection throughput against active servers: original, GRIN1-2 "
                     "and multihomed, emulated and the models (Fig. 7)"),
              Figure("grin-hops", "hops.png",
                     "h1 and h2 below the maximum multi-commodity flow by GRIN degree, per "
                     "traffic pattern, beside the paper's 7 % and 32 % (section 5.1)"),
          ),
          ),
    Paper("004_a477753408ad7b79.txt", "Packet spraying",
          "On the Efficacy of Fine-Grained Traffic Splitting Protocols in Data Center "
          "Networks", "A. Dixit, P. Prakash and R. R. Kompella, ACM SIGCOMM 2011 (poster)",
          "004-plts.md", ("plts",),
          summary="Spraying a flow's packets over every equal-cost path (random, counter or "
                  "round-robin per packet) beats ECMP's per-flow hashing on a fat tree: "
                  "round robin reaches about 92 % of the ideal throughput, about 1.5x ECMP, "
                  "at a third (p90) and a sixth (p99) of its latency (QualNet, k=6, 27 "
                  "flows).  `plts` runs the four schemes on a k=6 fat tree with the paper's "
                  "era of TCP loss recovery (--recovery classic).",
          conditions=(
              Condition("simulator / emulator", "QualNet", "plts", "backend"),
              Condition("fat tree", "k=6, 54 hosts, 27 flows", "plts", "topo"),
              Condition("link rate", "not stated", "plts", "bw", "Mb/s"),
              Condition("TCP loss recovery", "the simulator's (2011)", "plts", "recovery"),
              Condition("ECMP's queue", "not stated", "plts", "ecmp_aqm"),
              Condition("duration", "not stated", "plts", "duration", "s"),
              Condition("repetitions", "not stated (one pairing)", "plts", "runs"),
          ),
          figures=(
              Figure("plts", "throughput.png",
                     "% of the ideal throughput per scheme (the paper's Fig. 1(a))"),
              Figure("plts", "latency_rank.png",
                     "fabric latency per scheme (Fig. 1(b))"),
          )),
)}


def paper_of(experiment: str) -> Paper | None:
    """The paper whose claims ``experiment`` judges."""
    return next((p for p in PAPERS.values() if experiment in p.experiments), None)


def _num(x: float) -> str:
    return f"{x:.3g}" if x < 1 else f"{x:g}"


#: (experiment, parameter, our value) -> what a measured check found that value does to a
#: headline statistic against the paper's value (issue #54 part 2: ns-3, where it has a view
#: of the statistic); ``scale`` adds it after that condition.  Checked so far: 000's TCP
#: mean at quick mode's 5 Mb/s (docs/notebook/2026-12-03-scaled-rate-ns3.md).
SCALE_CHECKS: dict[tuple[str, str, float], str] = {
    ("permutation", "bw", 5.0): "in ns-3 the TCP mean reads +0.041 [+0.002, +0.079] of the "
                                "link above 15 Mb/s's: not the paper's regime for it; "
                                "bench/bench_scaled_rate.py",
}


def scale(experiment: str, params: Mapping[str, Any]) -> str:
    """A run's set-up against the paper's (issue #54 part 2), from its parameters: every
    condition of its paper with a unit, for this experiment, as "link rate 10 of 15 Mb/s
    (0.667x)", or "(the paper's not stated)"; '' when there is none.  Written into every
    run's config.json, shown beside its verdicts (the run's answer and the report's
    page)."""
    paper = paper_of(experiment)
    conditions = [c for c in paper.conditions if c.unit] if paper else []
    mine = {c.param for c in conditions if c.experiment == experiment}
    parts = []
    # the paper's set-up is one for all its experiments: another experiment's condition
    # counts where this one has none on that parameter (permutation takes fairness' rate)
    for c in conditions:
        if (c.experiment != experiment and c.param in mine) or \
                params.get(c.param) in (None, ""):
            continue
        try:
            ours = float(params[c.param])
        except (TypeError, ValueError):
            continue
        if not c.numbers:
            parts.append(f"{c.what} {_num(ours)} {c.unit} (the paper's not stated)")
            continue
        theirs = "-".join(_num(n) for n in c.numbers)
        factor = "-".join(_num(ours / n) for n in sorted(c.numbers, reverse=True))
        checked = SCALE_CHECKS.get((experiment, c.param, ours))
        parts.append(f"{c.what} {_num(ours)} of {theirs} {c.unit} ({factor}x)"
                     + (f" ({checked})" if checked else ""))
    return "; ".join(parts)


def citation(p: Paper) -> str:
    """How a reader cites it: the title, then who wrote it and where it appeared."""
    return f"{p.title}. {p.venue}."


def markdown_list() -> str:
    """The README's list of the papers (`dcrepro list papers --markdown`): each by its file's
    number, cited by title, authors and venue, linked to its results page."""
    return "".join(f"- `{p.file[:3]}_…` [{p.nick}](docs/results/{p.page}): *{p.title}*. "
                   f"{p.venue}.\n" for p in PAPERS.values())
