"""Start the os-ken controller with the dcrepro app (os-ken 4 ships no osken-manager).

    python -m controller.launch --plan PLAN.json [--port 6653] [--host 127.0.0.1]

Listens on loopback only by default.  ``--topo`` and ``--routing`` compute the plan here
instead of reading one, for use with plain ``mn --controller remote``.
"""
from __future__ import annotations

import argparse
import atexit
import os
import sys
import tempfile


def main(argv: list[str] | None = None) -> int:
    """Parse flags, prepare the plan, and block running the controller."""
    ap = argparse.ArgumentParser(prog="controller.launch", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", help="plan.json written by dcrepro")
    ap.add_argument("--topo", help="topology spec, e.g. fattree,k=4 (instead of --plan)")
    ap.add_argument("--routing", default="ecmp", help="routing spec (with --topo)")
    ap.add_argument("--port", type=int, default=6653, help="OpenFlow TCP port")
    ap.add_argument("--host", default="127.0.0.1", help="listen address")
    args = ap.parse_args(argv)
    if bool(args.plan) == bool(args.topo):
        ap.error("give exactly one of --plan or --topo")
    if args.topo:
        import routing
        import topos
        try:
            plan = routing.make_plan(topos.build(args.topo), args.routing)
        except ValueError as exc:     # SpecError included: a bad --topo or --routing
            ap.error(str(exc))
        fd, path = tempfile.mkstemp(prefix="dcrepro-plan-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            fh.write(plan.dumps())
        atexit.register(os.unlink, path)
        args.plan = path
    os.environ["DCREPRO_PLAN"] = os.path.abspath(args.plan)

    from os_ken.lib import hub
    hub.patch(thread=False)
    from os_ken import cfg
    from os_ken.base.app_manager import AppManager

    cfg.CONF(args=["--ofp-listen-host", args.host, "--ofp-tcp-listen-port", str(args.port)],
             project="os_ken")
    AppManager.run_apps(["controller.app"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
