"""The switch's AQM without root: the decision arithmetic of dataplanes/bpf/aqm.h, compiled
as it is into a shared object and called through ctypes with hand-computed cases (the BPF
program includes the very same header); the --aqm spec's parsing and defaults; the
translation of a spec into the ``aqm`` map's entries; the dataplane capability that makes
ovs refuse it before anything is built."""
import ctypes
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from dataplanes.bpf import aqm as bq
from emulator import aqm
from emulator.shaping import LinkSpec


def validate(values: dict[str, object]) -> None:
    """``values`` checked as a permutation run's parameters are (Params.check), the others
    its defaults; the bpf dataplane unless given (the door resolves 'auto' first)."""
    from experiments.permutation.experiment import PermutationParams
    PermutationParams(**{"dataplane": "bpf", **values}).check()


HEADER = Path(bq.SOURCE).parent / "aqm.h"
ONE = 1 << 24
FP = 1 << 16


class Port(ctypes.Structure):
    """aqm.h's struct aqm_port."""

    _fields_ = [(n, ctypes.c_uint32) for n in ("mode", "netns", "k", "min_th", "max_th",
                                                "max_p", "wlog", "qlen")] + \
               [(n, ctypes.c_uint64) for n in ("frame_ns", "idle_since", "avg", "count",
                                                "marks", "drops", "unmarkable", "events")]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cc = shutil.which("clang") or shutil.which("cc")
    if cc is None:
        pytest.skip("needs a C compiler")
    so = tmp_path_factory.mktemp("aqm") / "libaqm.so"
    # AQM_API empty: the header's functions become ordinary exported ones
    subprocess.run([cc, "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-DAQM_API=", "-x", "c",
                    str(HEADER), "-o", str(so)], check=True, timeout=120)
    lib = ctypes.CDLL(str(so))
    lib.aqm_decide.argtypes = [ctypes.POINTER(Port), ctypes.c_uint32, ctypes.c_uint32,
                               ctypes.c_uint64]
    lib.aqm_decide.restype = ctypes.c_int
    for name, args in (("aqm_decay", [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32]),
                       ("aqm_ewma", [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32])):
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_uint64
    lib.aqm_red_prob.argtypes = [ctypes.POINTER(Port), ctypes.c_uint64, ctypes.c_uint64]
    lib.aqm_red_prob.restype = ctypes.c_uint64
    return lib


def test_python_mirror_of_the_layout_is_the_header_size():
    assert ctypes.sizeof(Port) == bq.AQM_PORT.size == 96
    assert [f[0] for f in Port._fields_][:8] == list(bq.AqmPort._fields[:8])


PASS, MARK, DROP = 0, 1, 2
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3


def test_ecn_marks_ect_at_and_above_k_only(lib):
    p = Port(mode=1, k=20)
    for qlen, ecn, want in ((0, ECT0, PASS), (19, ECT0, PASS), (20, ECT0, MARK),
                            (20, ECT1, MARK), (99, CE, MARK), (20, NOT_ECT, PASS),
                            (100, NOT_ECT, PASS)):
        p.qlen = qlen
        assert lib.aqm_decide(ctypes.byref(p), ecn, 0, 0) == want, (qlen, ecn)
    assert p.avg == 0 and p.count == 0        # ecn keeps no state


def test_droptail_entry_decides_nothing(lib):
    p = Port(mode=0, k=1, qlen=1000)
    assert lib.aqm_decide(ctypes.byref(p), ECT0, 0, 0) == PASS


def test_ewma_steps(lib):
    assert lib.aqm_ewma(0, 10, 1) == 5 * FP                 # 0 + (10 - 0) / 2
    assert lib.aqm_ewma(5 * FP, 0, 2) == 245760             # 5 - 5/4 = 3.75
    assert lib.aqm_ewma(3 * FP, 3, 9) == 3 * FP             # at the sample: unchanged
    assert lib.aqm_ewma(0, 1, 0) == FP                      # w = 1: the sample itself


def test_idle_decay(lib):
    assert lib.aqm_decay(FP, 1, 1) == FP // 2               # (1 - 1/2)^1
    assert lib.aqm_decay(FP, 3, 1) == FP // 8               # (1 - 1/2)^3
    assert lib.aqm_decay(FP, 0, 9) == FP                    # no idle time
    assert lib.aqm_decay(100 * FP, 1 << 24, 9) == 0         # beyond the table: gone
    got = lib.aqm_decay(FP, 512, 9) / FP                    # (1 - 1/512)^512 = 0.3675
    assert abs(got - (1 - 2**-9) ** 512) < 0.002
    got = lib.aqm_decay(20 * FP, 1000, 9) / FP              # 20 (1 - 1/512)^1000 = 2.83
    assert abs(got - 20 * (1 - 2**-9) ** 1000) < 0.05


def test_red_probability_with_floyds_count(lib):
    p = Port(mode=2, min_th=5, max_th=15, max_p=round(0.1 * ONE))     # 1677722
    pb = 1677722 * (5 * FP) // (10 * FP)                               # avg 10: halfway
    assert pb == 838861
    assert lib.aqm_red_prob(ctypes.byref(p), 10 * FP, 0) == pb
    assert lib.aqm_red_prob(ctypes.byref(p), 10 * FP, 1) == pb * ONE // (ONE - pb)  # 883011
    assert lib.aqm_red_prob(ctypes.byref(p), 10 * FP, 19) == pb * ONE // (ONE - 19 * pb)
    assert lib.aqm_red_prob(ctypes.byref(p), 10 * FP, 20) == ONE      # count * pb >= 1
    assert lib.aqm_red_prob(ctypes.byref(p), 5 * FP, 0) == 0           # at min: 0


def test_red_decisions_instantaneous_average(lib):
    # w = 2^0: the average is the sample, so the thresholds act on qlen directly
    p = Port(mode=2, min_th=5, max_th=15, max_p=round(0.1 * ONE), wlog=0)
    p.qlen = 4
    assert lib.aqm_decide(ctypes.byref(p), NOT_ECT, 0, 0) == PASS and p.count == 0
    p.qlen = 15                                                   # at max: all of them
    assert lib.aqm_decide(ctypes.byref(p), NOT_ECT, ONE - 1, 0) == DROP
    assert lib.aqm_decide(ctypes.byref(p), ECT0, ONE - 1, 0) == MARK
    p.qlen, p.count = 10, 0
    # first packet in range: p_a = p_b = 838861; a random number just below hits
    assert lib.aqm_decide(ctypes.byref(p), NOT_ECT, 838860, 0) == DROP and p.count == 0
    # right after a drop, p_a = p_b again; a random number equal to it misses
    assert lib.aqm_decide(ctypes.byref(p), NOT_ECT, 838861, 0) == PASS and p.count == 1
    # one let through: p_a = 883011
    assert lib.aqm_decide(ctypes.byref(p), NOT_ECT, 883011, 0) == PASS and p.count == 2
    assert lib.aqm_decide(ctypes.byref(p), ECT0, 0, 0) == MARK and p.count == 0
    # only 24 bits of the random number count
    p.count = 0
    assert lib.aqm_decide(ctypes.byref(p), NOT_ECT, (7 << 24) | 838860, 0) == DROP


def test_red_average_decays_over_an_idle_period(lib):
    p = Port(mode=2, min_th=1, max_th=3, max_p=ONE, wlog=1, avg=8 * FP, qlen=0,
             idle_since=1000, frame_ns=100)
    # 300 ns idle = 3 frames: 8 / 2^3 = 1, then the arrival's own step toward 0: 0.5
    assert lib.aqm_decide(ctypes.byref(p), NOT_ECT, 0, 1300) == PASS
    assert p.avg == FP // 2 and p.idle_since == 1300 and p.count == 0
    # without the idle period (queue not empty) the average moves one step only
    p2 = Port(mode=2, min_th=1, max_th=3, max_p=ONE, wlog=1, avg=8 * FP, qlen=0)
    assert lib.aqm_decide(ctypes.byref(p2), NOT_ECT, 0, 1300) == DROP   # avg 4 >= max 3
    assert p2.avg == 4 * FP


def test_red_drop_share_matches_the_geometric_spacing(lib):
    """Over many arrivals at a steady average the share dropped is 1 / E[gap] with
    Floyd's uniform gap, E = 1/(2 p_b) + 1/2 (p_b = 0.05 here: 1/10.5 = 0.0952)."""
    import random
    rng = random.Random(7)
    p = Port(mode=2, min_th=5, max_th=15, max_p=round(0.1 * ONE), wlog=0, qlen=10)
    n = 200_000
    drops = sum(lib.aqm_decide(ctypes.byref(p), NOT_ECT, rng.getrandbits(32), 0) == DROP
                for _ in range(n))
    assert abs(drops / n - 1 / 10.5) < 0.003


# -- the spec ----------------------------------------------------------------------------

def test_parse_defaults_and_options():
    assert aqm.parse("droptail") == aqm.AqmSpec() and not aqm.parse("droptail").active
    assert aqm.parse("ecn", 100) == aqm.AqmSpec("ecn", k=20)
    assert aqm.parse("ecn,k=7", 100).k == 7
    red = aqm.parse("red", 100)
    assert (red.min_th, red.max_th, red.max_p, red.wlog) == (20, 60, 0.1, 9)
    assert aqm.parse("red", 30) == aqm.AqmSpec("red", min_th=6, max_th=18, max_p=0.1, wlog=9)
    got = aqm.parse("red,min=5,max=15,p=0.02,w=4", 100)
    assert got.describe() == "red,min=5,max=15,p=0.02,w=4"
    assert aqm.parse(got.describe(), 100) == got


@pytest.mark.parametrize("spec,why", [
    ("codel", "must be one of"), ("ecn,k=0", "k must be 1..100"),
    ("ecn,k=101", "k must be 1..100"), ("ecn,min=3", "takes no option"),
    ("red,min=10,max=10", "min < max"), ("red,max=101", "min < max"),
    ("red,p=0", "p must be in"), ("red,p=x", "p must be a number"),
    ("red,w=17", "w (EWMA"), ("ecn,k=2,k=3", "takes no option"), ("red,min", "takes no")])
def test_bad_specs_are_one_line_errors(spec, why, one_line_error):
    with one_line_error(why.replace("(", r"\(")):
        aqm.parse(spec, 100)


def test_link_spec_checks_aqm_and_burst():
    assert LinkSpec(10, 100, "15k", "ecn").burst_b == 15360
    assert LinkSpec(10, 100, "10p").burst_b == 15140
    assert LinkSpec(10, 100, "3000").burst_b == 3000
    assert LinkSpec().burst_b is None
    for bad in ("15x", "100", "-3", "1p5"):
        with pytest.raises(ValueError, match="--burst"):
            LinkSpec(10, 100, bad)
    with pytest.raises(ValueError, match="k must be 1..10"):
        LinkSpec(10, 10, "default", "ecn")          # the default K does not fit a queue of 10


def test_ovs_refuses_aqm_before_anything_is_built():
    base = {"bw": 10.0, "queue": 100, "burst": "default"}
    with pytest.raises(ValueError, match="--aqm ecn needs aqm, which the ovs dataplane does "
                                         "not offer; use --dataplane bpf"):
        validate({**base, "aqm": "ecn", "dataplane": "ovs"})
    validate({**base, "aqm": "droptail", "dataplane": "ovs"})
    validate({**base, "aqm": "red", "dataplane": "bpf"})
    with pytest.raises(ValueError, match="flow model has no queues"):
        validate({**base, "aqm": "red", "dataplane": "bpf", "backend": "model"})


# -- the translation to map entries -------------------------------------------------------

def test_entries_for_every_port_with_its_own_frame_time():
    ports = {11: 10.0, 12: 40.0}
    assert bq.aqm_entries(aqm.parse("droptail"), ports, 99) == {}
    ecn = bq.aqm_entries(aqm.parse("ecn,k=20"), ports, 99)
    assert ecn == {11: bq.AqmPort(1, 99, 20), 12: bq.AqmPort(1, 99, 20)}
    red = bq.aqm_entries(aqm.parse("red,min=5,max=15,p=0.1,w=9"), ports, 99)
    # a 1514-byte frame: 1211.2 us at 10 Mb/s, 302.8 us at 40 Mb/s
    assert red[11] == bq.AqmPort(2, 99, 0, 5, 15, 1677722, 9, frame_ns=1211200)
    assert red[12].frame_ns == 302800
    assert bq.aqm_entries(aqm.parse("red,min=5,max=15,p=1"), ports, 1)[11].max_p == ONE
    # each entry packs to what the C struct holds, counters zero
    raw = bq.pack_aqm_port(red[11])
    assert len(raw) == 96 and raw[:4] == b"\x02\0\0\0" and raw[32:40] == \
        (1211200).to_bytes(8, "little") and raw[40:] == bytes(56)


def test_every_emulated_experiment_takes_aqm_and_burst():
    from harness.params import NetworkParams
    assert NetworkParams().aqm == "droptail" and NetworkParams().burst == "default"
    assert math.isclose(NetworkParams().bw, 10.0)


def test_root_qlen_reads_a_root_qdisc_by_netlink():
    """The in-process reader the root test compares the tracepoints' copy with: lo's root
    qdisc (noqueue) holds nothing; an ifindex with no device has no root qdisc."""
    import socket

    from emulator.netns import root_qlen
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as nl:
        assert root_qlen(nl, socket.if_nametoindex("lo")) == 0
        assert root_qlen(nl, 2**31 - 1) is None
