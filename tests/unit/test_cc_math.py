"""The fixed-point arithmetic of the BPF congestion controls (emulator/bpf/cc/cc_math.h),
compiled by clang into a shared object and called through ctypes: the same text the BPF
programs include, checked against values worked out by hand from RFC 6356 (LIA) and
RFC 8257 (DCTCP) and BALIA's paper (Peng, Walid, Hwang, Low 2016), and against the formulas
in floating point on random inputs."""
from __future__ import annotations

import ctypes
import random
import shutil
from collections.abc import Iterator

import pytest

from emulator import cc

pytestmark = pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang")

Q16 = 1 << 16
N = 8          # CC_LIA_MAX_SUBFLOWS


@pytest.fixture(scope="module")
def lib(tmp_path_factory):  # type: ignore[no-untyped-def]
    so = ctypes.CDLL(str(cc.build_math_library(tmp_path_factory.mktemp("ccmath"))))
    so.lia_alpha_q16.restype = ctypes.c_uint64
    so.lia_alpha_q16.argtypes = [ctypes.POINTER(ctypes.c_uint32)] * 2
    so.lia_ai_window.restype = ctypes.c_uint32
    so.lia_ai_window.argtypes = [ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32]
    for fn in (so.balia_ai_window, so.balia_ssthresh):
        fn.restype = ctypes.c_uint32
        fn.argtypes = [ctypes.POINTER(ctypes.c_uint32)] * 2 + [ctypes.c_uint32]
    so.olia_increment_q32.restype = ctypes.c_int64
    so.olia_increment_q32.argtypes = [ctypes.POINTER(ctypes.c_uint32)] * 3 + [ctypes.c_uint32]
    so.dctcp_alpha_update.restype = ctypes.c_uint32
    so.dctcp_alpha_update.argtypes = [ctypes.c_uint32] * 3
    so.dctcp_ssthresh.restype = ctypes.c_uint32
    so.dctcp_ssthresh.argtypes = [ctypes.c_uint32] * 2
    return so


def alpha(lib, cwnd: list[int], rtt_us: list[int]) -> int:  # type: ignore[no-untyped-def]
    """lia_alpha_q16 over the given subflows (the other slots empty)."""
    arr = ctypes.c_uint32 * N
    c = arr(*cwnd, *([0] * (N - len(cwnd))))
    r = arr(*rtt_us, *([0] * (N - len(rtt_us))))
    return int(lib.lia_alpha_q16(c, r))


def rfc_alpha(cwnd: list[int], rtt: list[float]) -> float:
    """RFC 6356 section 3, literally (equal MSS, so packets stand for bytes)."""
    total = sum(cwnd)
    best = max(c / r ** 2 for c, r in zip(cwnd, rtt))
    return total * best / sum(c / r for c, r in zip(cwnd, rtt)) ** 2


# -- LIA: hand-worked values ------------------------------------------------------------

def test_alpha_two_equal_subflows_is_one_half(lib):
    # cwnd 10 and 10, both 10 ms: total 20, max c/r^2 = 10/r^2, sum c/r = 20/r
    # alpha = 20 * (10/r^2) / (20/r)^2 = 200 / 400 = 0.5
    assert alpha(lib, [10, 10], [10_000, 10_000]) == Q16 // 2


def test_alpha_unequal_windows_same_rtt(lib):
    # cwnd 10 and 30, same rtt: alpha = 40 * (30/r^2) / (40/r)^2 = 1200 / 1600 = 0.75
    assert alpha(lib, [10, 30], [10_000, 10_000]) == 3 * Q16 // 4


def test_alpha_one_subflow_is_one(lib):
    # alpha = c * (c/r^2) / (c/r)^2 = 1: a lone subflow increases as one TCP
    assert alpha(lib, [17], [2_345]) == Q16


def test_alpha_unequal_rtts(lib):
    # cwnd 10 at 10 ms, 10 at 20 ms.  c/r^2 (per ms^2): 0.1 and 0.025, so the first wins.
    # sum c/r = 10/10 + 10/20 = 1.5 per ms; alpha = 20 * 0.1 / 1.5^2 = 2 / 2.25 = 8/9
    got = alpha(lib, [10, 10], [10_000, 20_000])
    assert abs(got / Q16 - 8 / 9) < 1e-4, got
    assert got <= round(8 / 9 * Q16)         # truncated, never rounded up


def test_alpha_above_one_when_the_short_path_has_the_small_window(lib):
    # cwnd 2 at 10 ms, 10 at 100 ms: c/r^2 = 0.02 and 0.001 (first wins);
    # sum c/r = 0.2 + 0.1 = 0.3; alpha = 12 * 0.02 / 0.09 = 8/3
    got = alpha(lib, [2, 10], [10_000, 100_000])
    assert abs(got / Q16 - 8 / 3) < 1e-4, got


def test_empty_slots_are_left_out_and_all_empty_gives_zero(lib):
    arr = ctypes.c_uint32 * N
    # the subflows in slots 2 and 5, the others free
    c = arr(0, 0, 10, 0, 0, 30, 0, 0)
    r = arr(0, 0, 10_000, 0, 0, 10_000, 0, 0)
    assert lib.lia_alpha_q16(c, r) == 3 * Q16 // 4
    assert lib.lia_alpha_q16(arr(), arr()) == 0


def test_increase_is_the_smaller_of_the_coupled_and_the_tcp_one(lib):
    # two equal subflows of 10 (alpha 1/2, total 20): per ACK min(0.5/20, 1/10) = 1/40,
    # i.e. one packet per 40 acked: w = 40
    assert lib.lia_ai_window(20, Q16 // 2, 10) == 40
    # cwnd 2 at 10 ms and 10 at 100 ms (alpha 8/3, total 12): for the second,
    # alpha/total = 2/9 > 1/10, so TCP's 1/cwnd caps it: w = 10
    a = alpha(lib, [2, 10], [10_000, 100_000])
    assert lib.lia_ai_window(12, a, 10) == 10
    # ... and for the first: min(2/9, 1/2) = 2/9, w = 4.5 rounded up to 5 (never faster)
    assert lib.lia_ai_window(12, a, 2) == 5
    # a lone subflow: alpha 1, w = cwnd (Reno)
    assert lib.lia_ai_window(17, Q16, 17) == 17
    # alpha 0 (nothing known): Reno's window
    assert lib.lia_ai_window(20, 0, 7) == 7


def random_connections(seed: int, count: int = 2000) -> Iterator[tuple[list[int], list[int]]]:
    """``count`` connections of 1..N subflows: windows 1-5000 packets, RTTs 20 us - 2 s."""
    rng = random.Random(seed)
    for _ in range(count):
        n = rng.randint(1, N)
        yield ([rng.randint(1, 5000) for _ in range(n)],
               [rng.randint(20, 2_000_000) for _ in range(n)])


def test_alpha_matches_the_rfc_formula_on_random_connections(lib):
    for cwnd, rtt in random_connections(6356):
        want = rfc_alpha(cwnd, [float(r) for r in rtt])
        got = alpha(lib, cwnd, rtt) / Q16
        assert abs(got - want) <= 2e-3 * want + 2 / Q16, (cwnd, rtt, got, want)


def test_clamps_keep_extreme_inputs_finite(lib):
    # windows above 2^16 and RTTs above 2^23 us are clamped: the same alpha as at the clamp
    big = alpha(lib, [1 << 20, 1 << 20], [1 << 30, 1 << 30])
    assert big == alpha(lib, [1 << 16, 1 << 16], [1 << 23, 1 << 23]) == Q16 // 2


# -- BALIA: hand-worked values -------------------------------------------------------------

def balia(lib, fn: str, cwnd: list[int], rtt_us: list[int], self: int) -> int:  # type: ignore[no-untyped-def]
    """balia_ai_window or balia_ssthresh of subflow ``self`` (the other slots empty)."""
    arr = ctypes.c_uint32 * N
    c = arr(*cwnd, *([0] * (N - len(cwnd))))
    r = arr(*rtt_us, *([0] * (N - len(rtt_us))))
    return int(getattr(lib, fn)(c, r, self))


def paper_increase(cwnd: list[int], rtt: list[float], r: int) -> float:
    """BALIA's per-ACK increase of subflow r, literally: (x_r / rtt_r) / (sum x)^2 *
    (1 + a_r) / 2 * (4 + a_r) / 5, a_r = max x / x_r."""
    x = [c / t for c, t in zip(cwnd, rtt)]
    a = max(x) / x[r]
    return x[r] / rtt[r] / sum(x) ** 2 * (1 + a) / 2 * (4 + a) / 5


def test_balia_lone_subflow_is_reno(lib):
    # y = m = cwnd: W = 10 * 100 * 10 / (20 * 50) = 10, and the cut floor(cwnd / 2)
    assert balia(lib, "balia_ai_window", [10], [10_000], 0) == 10
    assert balia(lib, "balia_ssthresh", [10], [10_000], 0) == 5
    assert balia(lib, "balia_ssthresh", [11], [10_000], 0) == 5     # Reno: 11 >> 1


def test_balia_two_equal_subflows_increase_as_lia(lib):
    # a_r = 1: per ACK cwnd_r / y^2 = 10 / 400, one packet per 40 acked (LIA's too)
    assert balia(lib, "balia_ai_window", [10, 10], [10_000, 10_000], 0) == 40
    # the cut: min(a, 1.5) = 1, half the window
    assert balia(lib, "balia_ssthresh", [10, 10], [10_000, 10_000], 1) == 5


def test_balia_unequal_windows_same_rtt(lib):
    # cwnd 10 and 30, same rtt: y = 40, m = 30.  The small one: a = 3,
    # per ACK 10 / 1600 * (4/2) * (7/5) = 0.0175, W = 57.14 rounded up to 58;
    # loss: 10 - 10/2 * 1.5 = 2.5, kept 2
    assert balia(lib, "balia_ai_window", [10, 30], [10_000, 10_000], 0) == 58
    assert balia(lib, "balia_ssthresh", [10, 30], [10_000, 10_000], 0) == 2
    # the big one: a = 1, per ACK 30 / 1600, W = 53.3 -> 54; loss: half, 15
    assert balia(lib, "balia_ai_window", [10, 30], [10_000, 10_000], 1) == 54
    assert balia(lib, "balia_ssthresh", [10, 30], [10_000, 10_000], 1) == 15


def test_balia_unequal_rtts(lib):
    # cwnd 10 at 10 ms and 10 at 20 ms: x = 1 and 0.5 per ms, sum 1.5.
    # The slow one (r = 1): a = 2, per ACK 0.5 / 20 / 2.25 * 1.5 * 1.2 = 0.02, W = 50;
    # loss: 10 - 5 * 1.5 = 2.5, kept 2.
    assert balia(lib, "balia_ai_window", [10, 10], [10_000, 20_000], 1) == 50
    assert balia(lib, "balia_ssthresh", [10, 10], [10_000, 20_000], 1) == 2
    # the fast one (r = 0): a = 1, per ACK 1 / 10 / 2.25 = 1 / 22.5, W = 23 (rounded up)
    assert balia(lib, "balia_ai_window", [10, 10], [10_000, 20_000], 0) == 23
    assert balia(lib, "balia_ssthresh", [10, 10], [10_000, 20_000], 0) == 5


def test_balia_large_windows_and_rtt_ratios_stay_finite(lib):
    # y far above 2^21 (Q16) is shifted down with m and cwnd: equal whole windows stay exact
    assert balia(lib, "balia_ai_window", [1000, 1000], [10_000, 10_000], 0) == 4000
    assert balia(lib, "balia_ai_window", [3000, 3000], [10_000, 10_000], 1) == 12000
    # clamps: windows above 2^16, RTT ratio 2^23 (terms capped at 2^43): finite, >= cwnd
    w = balia(lib, "balia_ai_window", [1 << 20, 5], [1 << 30, 1], 1)
    assert 5 <= w < 1 << 32
    assert balia(lib, "balia_ssthresh", [1 << 20, 5], [1 << 30, 1], 1) == 2


def test_balia_empty_slot_and_slot_out_of_range(lib):
    # a subflow without a slot value: its own window (1 if none), and the floor of 2
    assert balia(lib, "balia_ai_window", [0, 10], [10_000, 10_000], 0) == 1
    assert balia(lib, "balia_ssthresh", [0, 10], [10_000, 10_000], 0) == 2
    assert balia(lib, "balia_ai_window", [10, 10], [10_000, 10_000], N) == 1


def test_balia_matches_the_paper_on_random_connections(lib):
    for i, (cwnd, rtt) in enumerate(random_connections(2016)):
        r = i % len(cwnd)
        want = 1 / paper_increase(cwnd, [float(t) for t in rtt], r)
        got = balia(lib, "balia_ai_window", cwnd, rtt, r)
        # rounded up (never faster than BALIA, but for the Q16 truncation of y's terms),
        # and never faster than one TCP: W >= cwnd_r
        assert want * (1 - 1e-5) <= got <= want * (1 + 1e-4) + 1, (cwnd, rtt, r, got, want)
        assert got >= cwnd[r]
        x = [c / t for c, t in zip(cwnd, rtt)]
        keep = cwnd[r] - cwnd[r] / 2 * min(max(x) / x[r], 1.5)
        assert abs(balia(lib, "balia_ssthresh", cwnd, rtt, r) - max(keep, 2)) <= 1, \
            (cwnd, rtt, r)


# -- OLIA: hand-worked values --------------------------------------------------------------

Q32 = 1 << 32


def olia(lib, cwnd: list[int], rtt_us: list[int], ell: list[int],  # type: ignore[no-untyped-def]
         self: int) -> float:
    """olia_increment_q32 of subflow ``self`` in packets per packet acked."""
    arr = ctypes.c_uint32 * N
    pad = [0] * (N - len(cwnd))
    return int(lib.olia_increment_q32(arr(*cwnd, *pad), arr(*rtt_us, *pad),
                                      arr(*ell, *pad), self)) / Q32


def paper_olia(cwnd: list[int], rtt: list[float], ell: list[int], r: int) -> float:
    """OLIA's increase per packet acked, as Khalili et al. write it, in floating point
    (best paths by l / rtt^2 on the same integer grid as the C: rtt in 64-us steps)."""
    n = len(cwnd)
    first = (cwnd[r] / rtt[r] ** 2) / sum(w / t for w, t in zip(cwnd, rtt)) ** 2
    score = [ell[i] / ((int(rtt[i]) >> 6) + 1) ** 2 for i in range(n)]
    best = {i for i in range(n) if score[i] == max(score)}
    top = {i for i in range(n) if cwnd[i] == max(cwnd)}
    collected = best - top
    if r in collected:
        a = 1 / (n * len(collected))
    elif r in top and collected:
        a = -1 / (n * len(top))
    else:
        a = 0.0
    return first + a / cwnd[r]


def test_olia_lone_subflow_is_reno(lib):
    # w / (w/r)^2 / r^2 = 1/w; one path is both best and largest: alpha 0
    assert olia(lib, [10], [10_000], [100], 0) == pytest.approx(1 / 10, abs=1e-9)


def test_olia_two_equal_subflows(lib):
    # 10 / (20)^2 = 1/40 each; both best and both largest: alpha 0
    for r in (0, 1):
        assert olia(lib, [10, 10], [10_000, 10_000], [64, 64], r) == \
            pytest.approx(1 / 40, abs=1e-9)


def test_olia_moves_window_from_the_largest_to_the_best(lib):
    # windows 10 and 30 at one RTT; subflow 0 has gone longer between losses (best), 1 is
    # the largest.  Subflow 0: 10/40^2 + (1/2)/10 = 0.00625 + 0.05 = 0.05625;
    # subflow 1: 30/40^2 - (1/2)/30 = 0.01875 - 0.016667 = 0.0020833
    cwnd, rtt, ell = [10, 30], [10_000, 10_000], [500, 100]
    assert olia(lib, cwnd, rtt, ell, 0) == pytest.approx(0.05625, abs=1e-6)
    assert olia(lib, cwnd, rtt, ell, 1) == pytest.approx(0.0020833, abs=1e-6)
    # the best subflow being also the largest: alpha 0 for both
    ell = [100, 500]
    assert olia(lib, cwnd, rtt, ell, 0) == pytest.approx(10 / 1600, abs=1e-6)
    assert olia(lib, cwnd, rtt, ell, 1) == pytest.approx(30 / 1600, abs=1e-6)


def test_olia_shrinks_the_largest_subflow_when_another_is_best(lib):
    # windows 10 and 12 at one RTT, subflow 0 best: subflow 1 gets 12/22^2 - (1/2)/12
    # = 0.024793 - 0.041667 < 0 (its window shrinks), subflow 0 10/22^2 + (1/2)/10
    got = olia(lib, [10, 12], [10_000, 10_000], [900, 10], 1)
    assert got == pytest.approx(12 / 22 ** 2 - 0.5 / 12, abs=1e-6) and got < 0
    assert olia(lib, [10, 12], [10_000, 10_000], [900, 10], 0) == \
        pytest.approx(10 / 22 ** 2 + 0.5 / 10, abs=1e-6)


def test_olia_unequal_rtts(lib):
    # windows 10, 10; RTTs 10 and 20 ms, equal l: subflow 0 (shorter RTT) is best, both
    # largest, so alpha 0.  First term: w_r/r_r^2 / (10/10 + 10/20)^2 (RTT in ms)
    for r, t in ((0, 10.0), (1, 20.0)):
        want = (10 / t ** 2) / (1.5 ** 2)
        assert olia(lib, [10, 10], [10_000, 20_000], [100, 100], r) == \
            pytest.approx(want, rel=1e-3)


def test_olia_empty_slot_gives_zero(lib):
    assert olia(lib, [10, 0], [10_000, 0], [1, 0], 1) == 0


def test_olia_matches_the_paper_on_random_connections(lib):
    rng = random.Random(2012)
    for cwnd, rtt in random_connections(2012):
        ell = [rng.randint(1, 1 << 20) for _ in cwnd]
        for r in range(len(cwnd)):
            want = paper_olia(cwnd, [float(t) for t in rtt], ell, r)
            got = olia(lib, cwnd, rtt, ell, r)
            # the first term is truncated twice in Q32 and its denominator in Q10
            assert abs(got - want) <= 1e-3 * abs(want) + 4e-9, (cwnd, rtt, ell, r, got, want)


# -- DCTCP: hand-worked values ------------------------------------------------------------

def test_dctcp_alpha_decays_by_g_without_marks(lib):
    # alpha 1, F 0: (1 - 1/16) * 1 = 0.9375 = 61440 / 65536
    assert lib.dctcp_alpha_update(Q16, 15_000, 0) == 61_440


def test_dctcp_alpha_from_zero_with_half_marked(lib):
    # alpha 0, F = 10000 / 20000 = 1/2: g * F = 1/32 = 2048 / 65536
    assert lib.dctcp_alpha_update(0, 20_000, 10_000) == 2_048


def test_dctcp_alpha_half_all_marked(lib):
    # alpha 1/2, F 1: 15/16 * 1/2 + 1/16 = 17/32 = 34816 / 65536
    assert lib.dctcp_alpha_update(Q16 // 2, 1_448, 1_448) == 34_816


def test_dctcp_alpha_small_values_reach_zero_and_one_is_the_cap(lib):
    # below 16 / 2^16 the g-shift is 0: the value still decays to 0 rather than sticking
    assert lib.dctcp_alpha_update(10, 1_000, 0) == 0
    assert lib.dctcp_alpha_update(Q16, 1_000, 1_000) == Q16
    # more marked than acked (cannot happen; guarded): as F = 1
    assert lib.dctcp_alpha_update(0, 1_000, 5_000) == Q16 // 16
    # nothing acked in the window: decay only
    assert lib.dctcp_alpha_update(Q16, 0, 0) == 61_440


def test_dctcp_alpha_converges_to_the_marked_fraction(lib):
    # 40 windows of F = 1 from 0: 1 - (15/16)^40 = 0.9243 (each step truncated)
    a = 0
    for _ in range(40):
        a = lib.dctcp_alpha_update(a, 10_000, 10_000)
    assert abs(a / Q16 - (1 - (15 / 16) ** 40)) < 1e-3, a


def test_dctcp_ssthresh(lib):
    # cwnd 100, alpha 1: 100 * (1 - 1/2) = 50
    assert lib.dctcp_ssthresh(100, Q16) == 50
    # alpha 1/4: 100 * (1 - 1/8) = 87.5; the cut (12.5) is truncated, 88 kept
    assert lib.dctcp_ssthresh(100, Q16 // 4) == 88
    # alpha 0: no cut; and never below 2
    assert lib.dctcp_ssthresh(100, 0) == 100
    assert lib.dctcp_ssthresh(3, Q16) == 2
    assert lib.dctcp_ssthresh(2, Q16) == 2


def test_the_coupled_controls_are_dcrepros_bpf_ones():
    # model.COUPLED_CCS (which runs the claims judge by the coupled TCP-like model) names
    # only controls emulator/cc.py can register
    from model import COUPLED_CCS
    assert set(COUPLED_CCS) <= set(cc.BPF_CCS) and "balia" in COUPLED_CCS
