"""``python -m unisim.testing NAME [--device D] [--nthread N]``: run the conformance checks on the
registered backend NAME (see ``unilab plugins``); one line per check, exit 1 on a failure."""

from __future__ import annotations

import argparse
import sys

from unisim.testing import run_conformance


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unisim.testing", description=__doc__)
    parser.add_argument("backend", help="registered backend name (--sim), e.g. mujoco")
    parser.add_argument("--device", default="cpu", help="spec.device (default cpu)")
    parser.add_argument("--nthread", type=int, default=1, help="spec.nthread (default 1)")
    args = parser.parse_args(argv)
    import unisim

    try:
        registration = unisim.get_backend(args.backend)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    print(f"conformance of backend {registration.name!r} "
          f"({registration.distribution} {registration.version}):")
    results = run_conformance(registration.item, device=args.device, nthread=args.nthread)
    for result in results:
        print(f"  {result}")
    failed = sum(r.status == "failed" for r in results)
    print(f"{len(results) - failed} of {len(results)} checks passed or skipped, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
