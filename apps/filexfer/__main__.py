"""``python -m apps.filexfer {send,recv}``.

Exit codes: 0 success; 1 a bounded wait expired (one line on stderr naming the round and
what was awaited); 2 bad arguments; 3 a socket error (cannot bind, join or send);
130 interrupted.  A ``--report`` file is written in every case but 2.
"""
from __future__ import annotations

import argparse
import sys

from . import receiver, sender


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command line of both sides, and the parser of each side (for its errors)."""
    ap = argparse.ArgumentParser(
        prog="python -m apps.filexfer",
        description="Iterative UDP file transfer of the Orca paper: round i sends one file to "
                    "every receiver, which answers ack_i once it has every byte; the next "
                    "round starts after all ACKs.  Lost datagrams are repaired on NACK.",
        epilog="exit codes: 0 ok, 1 a bounded wait expired, 2 bad arguments, 3 socket error")
    sub = ap.add_subparsers(dest="side", required=True, metavar="{send,recv}")
    s = sub.add_parser("send", help="send the rounds, wait for every ACK of each")
    sender.add_arguments(s)
    r = sub.add_parser("recv", help="receive, count and acknowledge the rounds")
    receiver.add_arguments(r)
    return ap, {"send": s, "recv": r}


def main(argv: list[str] | None = None) -> int:
    ap, sides = build_parser()
    args = ap.parse_args(argv)
    module = sender if args.side == "send" else receiver
    return module.run(args, sides[args.side])


if __name__ == "__main__":
    sys.exit(main())
