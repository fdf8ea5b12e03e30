/* SPDX-License-Identifier: GPL-2.0 */
/* What every BPF congestion control here (lia.bpf.c, dctcp.bpf.c) reads the same way: its
 * per-socket state and its one-entry counters map.  BPF programs only (vmlinux.h types;
 * cc_math.h is the part that userspace tests compile too).
 */
#ifndef DCREPRO_CC_SOCK_H
#define DCREPRO_CC_SOCK_H

/* The control's per-socket state: the socket's icsk_ca_priv area (the kernel's own
 * inet_csk_ca(), which is a C inline, not in BTF). */
static __always_inline void *inet_csk_ca(struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* The only entry of a one-entry (per-CPU) array map: the control's counters. */
static __always_inline void *only_entry(void *map)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(map, &zero);
}

#endif
