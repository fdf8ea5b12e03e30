/* SPDX-License-Identifier: GPL-2.0 */
/* Fixed-point arithmetic of dcrepro's BPF congestion controls (lia.bpf.c and its balia build, dctcp.bpf.c).
 *
 * The same text is compiled twice: into the BPF programs (static inline, no floats, no
 * 128-bit division: the verifier and the BPF backend have neither) and, with
 * -DCC_MATH_EXPORT, into a userspace shared object that tests/unit/test_cc_math.py calls
 * through ctypes, so the unit tests check exactly the code the kernel runs.
 *
 * LIA (RFC 6356), in packets (every subflow has the same MSS here):
 *
 *   alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2
 *
 * Let j be the subflow that maximises cwnd_i / rtt_i^2.  Multiplying the sum by rtt_j
 * leaves a sum of packets, y = sum_i cwnd_i * rtt_j / rtt_i, and
 *
 *   alpha = cwnd_total * cwnd_j / y^2
 *
 * so no 1/rtt^2 term (tiny, or huge, in any fixed point) is ever formed: y is kept in Q16
 * (packets * 2^16) and alpha is returned in Q16 (1.0 = 65536).  Bounds that keep every
 * product inside 64 bits: cwnd clamped to [1, 2^16] packets, rtt to [1, 2^23] us, at most
 * CC_LIA_MAX_SUBFLOWS subflows (cwnd_total <= 2^19).
 *
 * The per-ACK increase of subflow i, min(alpha * acked / cwnd_total, acked / cwnd_i)
 * packets, is acked / w with w = max(cwnd_total / alpha, cwnd_i): the kernel's additive
 * increase tcp_cong_avoid_ai(tp, w, acked) grows cwnd by one packet per w packets acked,
 * so the programs hand it that w (lia_ai_window).
 *
 * BALIA (Peng, Walid, Hwang and Low, "Multipath TCP: analysis, design and implementation",
 * IEEE/ACM ToN 2016), for subflow r with rates x_k = cwnd_k / rtt_k:
 *
 *   per ACK:   cwnd_r += (x_r / rtt_r) / (sum_k x_k)^2 * ((1 + a_r) / 2) * ((4 + a_r) / 5)
 *   per loss:  cwnd_r -= (cwnd_r / 2) * min(a_r, 1.5),        a_r = max_k x_k / x_r
 *
 * Multiplying every rate by rtt_r turns it into packets: y = sum_k cwnd_k * rtt_r / rtt_k
 * and m = max_k cwnd_k * rtt_r / rtt_k (m >= cwnd_r: the k = r term), so a_r = m / cwnd_r
 * and the increase per ACK is cwnd_r (1 + a_r)(4 + a_r) / (10 y^2) = 1 / W with
 *
 *   W = 10 y^2 cwnd_r / ((cwnd_r + m) (4 cwnd_r + m))          (balia_ai_window)
 *
 * and the loss cut is min(m, 1.5 cwnd_r) / 2 packets (balia_ssthresh).  W >= cwnd_r, since
 * y >= m >= cwnd_r: no subflow grows faster than one TCP on its path.  A lone subflow
 * (y = m = cwnd_r) gets W = cwnd_r and the cut cwnd_r / 2: Reno.  y and m are kept in Q16;
 * each term is capped at 2^43 (2^27 packets, far beyond any window here) so that y << 16
 * stays inside 64 bits whatever the RTT ratio.
 *
 * DCTCP: alpha in Q16 too (1.0 = 65536), g = 1/16 (shift 4):
 *
 *   alpha <- (1 - g) * alpha + g * F,   F = ECE-marked bytes / acked bytes of the window
 *   ssthresh = cwnd * (1 - alpha / 2)
 */
#ifndef DCREPRO_CC_MATH_H
#define DCREPRO_CC_MATH_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#ifdef CC_MATH_EXPORT
#define CC_FN __attribute__((visibility("default")))
#else
#define CC_FN static inline __attribute__((always_inline))
#endif

#define CC_LIA_MAX_SUBFLOWS 8
#define CC_Q16 16
#define CC_ONE_Q16 (1ULL << CC_Q16)
#define CC_CWND_BITS 16		/* cwnd clamped to 2^16 packets */
#define CC_RTT_BITS 23		/* rtt clamped to 2^23 us */
#define CC_DCTCP_SHIFT_G 4

/* Branch-free helpers.  The verifier walks every path of a program; a clamp written with
 * branches (8 slots x 3 ways) made lia_cong_avoid "too large" (over 10^6 instructions
 * processed), so the LIA loop branches once per slot only.  The empty asm keeps clang from
 * turning the arithmetic back into a compare and a branch. */
static inline __attribute__((always_inline)) __u64 cc_nonzero(__u64 x)
{
	__u64 v = x | (0 - x);	/* top bit set iff x != 0, for x < 2^63 */

	asm volatile("" : "+r"(v));
	return (v >> 63) & 1;
}

/* min(x, 2^bits), x < 2^63 */
static inline __attribute__((always_inline)) __u64 cc_sat(__u64 x, unsigned int bits)
{
	__u64 over = cc_nonzero(x >> bits);

	return x * (1 - over) + (over << bits);
}

/* RFC 6356's alpha in Q16 over CC_LIA_MAX_SUBFLOWS slots (cwnd 0: an empty slot, left
 * out); 0 when every slot is empty. */
CC_FN __u64 lia_alpha_q16(const __u32 *cwnd, const __u32 *rtt_us)
{
	__u64 total = 0, cj = 0, rj = 1, y = 0, t, c, r;
	int i;

	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
		c = cc_sat(cwnd[i], CC_CWND_BITS);
		r = cc_sat(rtt_us[i], CC_RTT_BITS);
		r += 1 - cc_nonzero(r);
		total += c;
		/* c_i / r_i^2 > c_j / r_j^2  <=>  c_i * r_j^2 > c_j * r_i^2 (both < 2^62); an
		 * empty slot (c = 0) never wins */
		if (c * rj * rj > cj * r * r) {
			cj = c;
			rj = r;
		}
	}
	if (!cj)
		return 0;
	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
		c = cc_sat(cwnd[i], CC_CWND_BITS);
		r = cc_sat(rtt_us[i], CC_RTT_BITS);
		r += 1 - cc_nonzero(r);
		y += ((c << CC_Q16) * rj) / r;		/* < 2^16 * 2^16 * 2^23 */
	}
	/* alpha = total * cj / y^2 with y = yq / 2^16, in two divisions:
	 *   t = total * cj * 2^28 / yq    (= total * cj / y * 2^12; total * cj < 2^35)
	 *   alpha_q16 = t * 2^20 / yq     (= total * cj / y^2 * 2^16)
	 * t <= total * 2^12 < 2^31 since y >= cj, so t << 20 < 2^51.  t >= 2^12 * 0.35 (y <=
	 * sqrt(cj) * sum sqrt(c_i)), so truncating t costs under 0.1 % of alpha. */
	t = ((total * cj) << 28) / y;
	return (t << 20) / y;
}

/* The additive-increase window of one subflow: cwnd grows by acked / w packets per ACK,
 * w = max(cwnd_total / alpha, cwnd_i), rounded up (never a faster increase than LIA's). */
CC_FN __u32 lia_ai_window(__u32 cwnd_total, __u64 alpha_q16, __u32 cwnd_i)
{
	__u64 w;

	if (alpha_q16 == 0)
		return cwnd_i ? cwnd_i : 1;
	w = (((__u64)cwnd_total << CC_Q16) + alpha_q16 - 1) / alpha_q16;
	if (w < cwnd_i)
		w = cwnd_i;
	if (w > 0xffffffffULL)
		w = 0xffffffffULL;
	return w ? (__u32)w : 1;
}

/* BALIA's y and m of subflow ``self`` (see the top), in Q16 packets; 0 and 0 when
 * ``self`` is not a slot or its slot is empty. */
static inline __attribute__((always_inline)) void
balia_sums(const __u32 *cwnd, const __u32 *rtt_us, __u32 self, __u64 *y, __u64 *m)
{
	__u64 rs, c, r, term;
	int i;

	*y = 0;
	*m = 0;
	if (self >= CC_LIA_MAX_SUBFLOWS || !cwnd[self])
		return;
	rs = cc_sat(rtt_us[self], CC_RTT_BITS);
	rs += 1 - cc_nonzero(rs);
	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
		c = cc_sat(cwnd[i], CC_CWND_BITS);
		r = cc_sat(rtt_us[i], CC_RTT_BITS);
		r += 1 - cc_nonzero(r);
		term = cc_sat(((c << CC_Q16) * rs) / r, 43);	/* < 2^32 * 2^23 before the cap */
		*y += term;
		if (term > *m)
			*m = term;
	}
}

/* BALIA's additive-increase window of subflow ``self``: cwnd grows by acked / W packets
 * per ACK (tcp_cong_avoid_ai), W = 10 y^2 cwnd / ((cwnd + m)(4 cwnd + m)), rounded up (never
 * a faster increase than BALIA's) and at least cwnd; 1 when the subflow has no slot or an
 * empty one.  The ratio is scale-free, so y, m and cwnd (all Q16) are shifted right
 * together until y < 2^21: then 10 cwnd y^2 < 2^4 * 2^16 * 2^42 and the denominator < 2^46
 * fit in 64 bits, and the quotient is exact whenever the shift drops only zero bits (whole
 * packets at equal RTTs). */
CC_FN __u32 balia_ai_window(const __u32 *cwnd, const __u32 *rtt_us, __u32 self)
{
	__u64 y, m, w, wq, s = 0, k, num, den, win;

	balia_sums(cwnd, rtt_us, self, &y, &m);
	if (!y)		/* no slot, or an empty one (y > 0 otherwise) */
		return 1;
	w = cc_sat(cwnd[self & (CC_LIA_MAX_SUBFLOWS - 1)], CC_CWND_BITS);
	wq = w << CC_Q16;
	/* s = the bits of y above 21 (y < 2^46: s <= 25), branch-free as in cc_sat */
	for (k = 16; k; k >>= 1)
		s += k * cc_nonzero(y >> (20 + s + k));
	y >>= s;
	m >>= s;
	wq >>= s;
	num = 10 * w * y * y;
	den = (wq + m) * (4 * wq + m);		/* m >= y / 8 > 0 */
	win = (num + den - 1) / den;
	if (win < w)
		win = w;
	if (win > 0xffffffffULL)
		win = 0xffffffffULL;
	return (__u32)win;
}

/* BALIA's window after a loss of subflow ``self``: cwnd - min(m, 1.5 cwnd) / 2, the cut
 * rounded up (a lone subflow keeps floor(cwnd / 2), as Reno), at least 2. */
CC_FN __u32 balia_ssthresh(const __u32 *cwnd, const __u32 *rtt_us, __u32 self)
{
	__u64 y, m, w, wq, cut;

	balia_sums(cwnd, rtt_us, self, &y, &m);
	if (!y)
		return 2;
	w = cc_sat(cwnd[self & (CC_LIA_MAX_SUBFLOWS - 1)], CC_CWND_BITS);
	wq = w << CC_Q16;
	cut = m < wq + (wq >> 1) ? m : wq + (wq >> 1);
	cut = (cut + (1ULL << (CC_Q16 + 1)) - 1) >> (CC_Q16 + 1);
	return w < cut + 2 ? 2 : (__u32)(w - cut);
}

/* OLIA (Khalili, Gast, Popovic and Le Boudec, "MPTCP is not Pareto-optimal", CoNEXT 2012;
 * IEEE/ACM ToN 2013): on each packet acked on subflow r its window grows by
 *
 *   (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2  +  alpha_r / w_r
 *
 * where, with n subflows, M the subflows of largest window and B those of largest
 * l_p / rtt_p^2 (l_p: bytes acked between the subflow's last two losses, or since its last
 * loss if more: the best paths), alpha_r = 1 / (n |B \ M|) for r in B \ M, -1 / (n |M|) for
 * r in M when B \ M is not empty, 0 otherwise.  The loss cut is Reno's.
 *
 * olia_increment_q32 returns that growth per packet acked in Q32 (2^32 = one packet),
 * signed: alpha moves window from the largest subflows to the best ones.  The first term is
 * w_r / D^2 with D = sum_p w_p rtt_r / rtt_p (packets, kept in Q10): a = (w_r << 42) / D is
 * w_r / D in Q32 (< 2^32 since D >= w_r), then (a << 10) / D.  Best paths are compared by
 * cross-multiplying l (KiB, capped at 2^24) and (rtt >> 6)^2 (rtt < 2^23 us, so < 2^34). */
#define CC_OLIA_ELL_BITS 24

/* 1 if a > b, for a, b < 2^63, branch-free (b - a wraps below 0 exactly then) */
static inline __attribute__((always_inline)) __u64 cc_gt(__u64 a, __u64 b)
{
	__u64 v = b - a;

	asm volatile("" : "+r"(v));
	return (v >> 63) & 1;
}

/* Slot i as OLIA reads it: window and RTT clamped as everywhere, l in KiB capped at 2^24,
 * and (rtt in 64-us steps, from 1)^2 for comparing l / rtt^2. */
static inline __attribute__((always_inline)) void
olia_slot(const __u32 *cwnd, const __u32 *rtt_us, const __u32 *ell_kib, __u64 i, __u64 *c,
	  __u64 *r, __u64 *l, __u64 *r2)
{
	*c = cc_sat(cwnd[i], CC_CWND_BITS);
	*r = cc_sat(rtt_us[i], CC_RTT_BITS);
	*l = cc_sat(ell_kib[i], CC_OLIA_ELL_BITS);
	*r2 = ((*r >> 6) + 1) * ((*r >> 6) + 1);
}

/* The loops are branch-free (cc_gt, cc_nonzero), as LIA's: with a branch or two per slot
 * the verifier walked past its 10^6 instructions. */
CC_FN __s64 olia_increment_q32(const __u32 *cwnd, const __u32 *rtt_us, const __u32 *ell_kib,
			       __u32 self)
{
	__u64 w, rr, d = 0, a, term, best_l = 0, best_r2 = 1, max_w = 0, n = 0, nb = 0, nm = 0,
	      me_in_b = 0, me_in_m = 0, c, r, l, r2, on, rep, in_m, in_b, mine, i;
	__u32 me = self & (CC_LIA_MAX_SUBFLOWS - 1);
	__s64 inc;

	w = cc_sat(cwnd[me], CC_CWND_BITS);
	if (!w)
		return 0;
	rr = cc_sat(rtt_us[me], CC_RTT_BITS);
	rr += 1 - cc_nonzero(rr);
	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
		olia_slot(cwnd, rtt_us, ell_kib, i, &c, &r, &l, &r2);
		on = cc_nonzero(c);
		r += 1 - cc_nonzero(r);
		n += on;
		d += (c * (rr << 10)) / r;		/* < 2^16 * 2^33; 0 for an empty slot */
		max_w += cc_gt(c, max_w) * (c - max_w);
		/* l / r2 > best_l / best_r2, cross-multiplied (each side < 2^24 * 2^34); the
		 * first slot in use always takes the place */
		rep = on * (cc_gt(l * best_r2, best_l * r2) | (1 - cc_nonzero(best_l)));
		best_l += rep * (l - best_l);
		best_r2 += rep * (r2 - best_r2);
	}
	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
		olia_slot(cwnd, rtt_us, ell_kib, i, &c, &r, &l, &r2);
		on = cc_nonzero(c);
		in_m = on & (1 - cc_nonzero(c ^ max_w));
		in_b = on & (1 - cc_nonzero((l * best_r2) ^ (best_l * r2)));
		mine = 1 - cc_nonzero(i ^ me);
		nm += in_m;
		nb += in_b & (1 - in_m);
		me_in_b |= mine & in_b;
		me_in_m |= mine & in_m;
	}
	a = (w << 42) / d;			/* d >= w << 10 > 0 */
	term = (a << 10) / d;
	inc = (__s64)term;
	if (nb && me_in_b && !me_in_m)
		inc += (__s64)((1ULL << 32) / (n * nb * w));
	else if (nb && me_in_m)
		inc -= (__s64)((1ULL << 32) / (n * nm * w));
	return inc;
}

/* One DCTCP window's alpha update: acked and marked are the bytes acknowledged in the
 * window and those of them acknowledged with ECE. */
CC_FN __u32 dctcp_alpha_update(__u32 alpha_q16, __u32 acked, __u32 marked)
{
	__u64 a = alpha_q16, decay = a >> CC_DCTCP_SHIFT_G;

	/* below 16/2^16 the shift gives 0 and alpha could never reach 0: take it all */
	a -= decay ? decay : a;
	if (marked && acked) {
		if (marked > acked)
			marked = acked;
		/* g * F in Q16: marked * 2^16 / 2^4 / acked */
		a += ((__u64)marked << (CC_Q16 - CC_DCTCP_SHIFT_G)) / acked;
	}
	return a > CC_ONE_Q16 ? (__u32)CC_ONE_Q16 : (__u32)a;
}

/* The window DCTCP keeps after a window with marks: cwnd * (1 - alpha / 2), at least 2. */
CC_FN __u32 dctcp_ssthresh(__u32 cwnd, __u32 alpha_q16)
{
	__u64 cut = ((__u64)cwnd * alpha_q16) >> (CC_Q16 + 1);
	__u64 left = cwnd - cut;

	return left < 2 ? 2 : (__u32)left;
}

#endif
