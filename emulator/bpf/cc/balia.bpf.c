// SPDX-License-Identifier: GPL-2.0
/* "balia": BALIA, Balanced Linked Adaptation (Peng, Walid, Hwang and Low, IEEE/ACM ToN 2016),
 * for the subflows of an MPTCP connection.  It is lia.bpf.c built with CC_BALIA: the same
 * slots and snapshot, BALIA's increase and loss cut (cc_math.h). */
#define CC_BALIA 1
#include "lia.bpf.c"
