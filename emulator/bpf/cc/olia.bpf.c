// SPDX-License-Identifier: GPL-2.0
/* "olia": OLIA, the Opportunistic Linked-Increases Algorithm (Khalili, Gast, Popovic and
 * Le Boudec, IEEE/ACM ToN 2013), for the subflows of an MPTCP connection.  It is lia.bpf.c
 * built with CC_OLIA: the same slots and snapshot, each slot also holding the subflow's
 * bytes between losses, and OLIA's signed increase (cc_math.h); Reno's loss cut. */
#define CC_OLIA 1
#include "lia.bpf.c"
