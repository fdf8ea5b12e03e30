"""UDP file transfer of the Orca paper (001_da816e6d87c9a0a9.txt, sections II-III).

An iterative application: in round i the sender sends one file (synthetic, deterministic
bytes of a given size) to every receiver; each receiver counts the bytes and, once every
datagram of the round is there, answers ``ack_i``; round i+1 starts only after every
receiver's ACK.  Unicast mode uses one UDP socket per receiver (optionally spread over
several sending processes); multicast (Orca) mode sends each datagram once to a group
address and leaves replication to the network.

UDP loses datagrams, so rounds carry sequence numbers and end with an END marker; a
receiver missing data NACKs the missing ranges and the sender retransmits them (see
``sender.SenderCore`` and ``receiver.ReceiverSession``).  Run ``python -m apps.filexfer
{send,recv} --help``; the wire format is described in ``protocol``.
"""
