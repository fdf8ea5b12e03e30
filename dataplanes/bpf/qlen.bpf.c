// SPDX-License-Identifier: GPL-2.0
/* Each AQM port's exact queue length, for the switch program's decision (aqm.h).
 *
 * The switch program runs at the ingress of the port a packet arrives on and cannot see the
 * egress port's qdisc.  These two programs, on the qdisc:qdisc_enqueue and
 * qdisc:qdisc_dequeue tracepoints, copy the root qdisc's own packet count (q->q.qlen) into
 * the port's entry of the switch's ``aqm`` map every time it changes hands:
 *
 *   qdisc_enqueue  fired by dev_qdisc_enqueue() (net/core/dev.c) after the ROOT qdisc's
 *                  enqueue returned NET_XMIT_SUCCESS, so never for a packet the pfifo
 *                  refused (a tail drop does not change the length anyway); HTB's enqueue
 *                  into its pfifo leaf calls the child directly and fires nothing
 *   qdisc_dequeue  fired at the end of dequeue_skb() (net/sched/sch_generic.c) on every
 *                  dequeue attempt of the root qdisc: with a list of packets (bulk
 *                  dequeue), with NULL (HTB out of tokens: skipped here at once, the
 *                  length did not change), and again for a packet that the driver refused
 *                  and the stack requeued into q->gso_skb (dev_requeue_skb fires nothing
 *                  itself); HTB's internal peeks into its leaf fire nothing
 *
 * Copying q.qlen, rather than adding one per enqueue and subtracting one per dequeue, is
 * what makes the length exact whatever fires: a bulk dequeue of n, a requeued packet
 * dequeued twice, a NULL dequeue, a BPF run the kernel skipped (seen on this machine by
 * emulator/bpf/qgap.bpf.c, a few ms about once a second) cannot make it drift: the next hit
 * sets the truth again.  HTB counts in its root's q.qlen every packet of its tree (the pfifo
 * leaf's, plus at most one parked by the stack in gso_skb / skb_bad_txq): the packets
 * waiting at that port, in skbs, the unit of the pfifo's limit.  Both tracepoints fire
 * under the root qdisc's lock, so the copy is never older than the qdisc's last change.
 *
 * The dequeue program also notes when the queue went empty (idle_since), for RED's
 * idle-period decay.  Devices are matched by ifindex and their network namespace's inode
 * (ifindexes repeat across namespaces); every other qdisc event costs one hash lookup.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "aqm.h"

static __always_inline struct aqm_port *port_of(struct Qdisc *q)
{
	struct net_device *dev = q->dev_queue->dev;
	struct aqm_port *p;
	__u32 ifindex;

	if (!dev)
		return 0;
	ifindex = dev->ifindex;
	p = bpf_map_lookup_elem(&aqm, &ifindex);
	if (!p || p->netns != dev->nd_net.net->ns.inum)
		return 0;
	return p;
}

SEC("tp_btf/qdisc_enqueue")
int BPF_PROG(on_enqueue, struct Qdisc *q, const struct netdev_queue *txq, struct sk_buff *skb)
{
	struct aqm_port *p = port_of(q);

	if (!p)
		return 0;
	p->qlen = q->q.qlen;
	p->idle_since = 0;
	p->events++;
	return 0;
}

SEC("tp_btf/qdisc_dequeue")
int BPF_PROG(on_dequeue, struct Qdisc *q, const struct netdev_queue *txq, int packets,
	     struct sk_buff *skb)
{
	struct aqm_port *p;
	__u32 qlen;

	/* A dequeue that released nothing (HTB waiting for tokens: most hits on a busy link)
	 * changed nothing: no lookup.  A requeued packet's +1 is copied at its next dequeue. */
	if (!skb)
		return 0;
	p = port_of(q);
	if (!p)
		return 0;
	qlen = q->q.qlen;
	p->qlen = qlen;
	if (qlen == 0 && !p->idle_since)
		p->idle_since = bpf_ktime_get_ns();
	p->events++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
