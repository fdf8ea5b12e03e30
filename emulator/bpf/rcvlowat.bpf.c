// SPDX-License-Identifier: GPL-2.0
/* Receiver wake-ups (--rcvlowat): a TCP receiver in an emulated host is woken once per
 * `lowat` bytes instead of once per arriving segment.
 *
 * iperf3's server waits in select() and reads whatever is there: at 10 Mb/s that is one
 * wake-up, one context switch and one read per 1448-byte segment, about 19,000 a second at
 * k=6 (54 flows), which costs the machine more than any part of the switch program
 * (docs/measured.md).  SO_RCVLOWAT makes poll/select report the socket readable only once
 * that many bytes are queued (or at FIN), and the kernel keeps acknowledging every second
 * segment while fewer are queued (__tcp_ack_snd_check), so the sender sees the same ACKs.
 *
 * Which connections: the passive (accepted) ones whose local port is in [port_lo, port_hi)
 * in a network namespace of the run (netns map, by cookie), and only once such a
 * connection has received `after` bytes.  The threshold keeps iperf3's control connection
 * (the same port, a few kB in a whole test) and the start of a data connection (its 37-byte
 * cookie, read while the client waits) as they were: a low-water mark there would stall
 * them.  Until then the program asks to be called for every header the connection writes
 * (BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG: the receiver's ACKs), where bytes_received is read;
 * once it is set, the flag is cleared and the connection costs nothing more.
 *
 * Attached to the root of the cgroup v2 hierarchy for the run's lifetime by a bpf_link
 * (emulator/rcvlowat.py): the attachment ends when dcrepro's process does.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SOL_SOCKET 1
#define SO_RCVLOWAT 18

char _license[] SEC("license") = "GPL";

struct config {
	__u32 lowat;            /* bytes */
	__u32 port_lo, port_hi; /* local ports, host order: [lo, hi) */
	__u32 pad;
	__u64 after;            /* bytes received before the mark is set */
};

/* counters, by index */
enum { C_SET, C_FAILED, C_WATCHED, C_LOOKS, C_NCOUNTERS };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct config);
	__uint(max_entries, 1);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);     /* network namespace cookie */
	__type(value, __u8);
	__uint(max_entries, 4096);
} netns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, C_NCOUNTERS);
} counters SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &i);

	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("sockops")
int dcrepro_rcvlowat(struct bpf_sock_ops *skops)
{
	__u32 zero = 0, op = skops->op;
	struct config *cfg;
	__u64 cookie;
	int v;

	if (op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB && op != BPF_SOCK_OPS_HDR_OPT_LEN_CB)
		return 1;
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || skops->local_port < cfg->port_lo || skops->local_port >= cfg->port_hi)
		return 1;
	if (op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB) {
		cookie = bpf_get_netns_cookie(skops);
		if (!bpf_map_lookup_elem(&netns, &cookie))
			return 1;
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
					  BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
		count(C_WATCHED);
		return 1;
	}
	/* only connections flagged above get here (the flag is per socket) */
	count(C_LOOKS);
	if (skops->bytes_received < cfg->after)
		return 1;
	v = cfg->lowat;
	count(bpf_setsockopt(skops, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)) ? C_FAILED : C_SET);
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags &
				  ~BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
	return 1;
}
