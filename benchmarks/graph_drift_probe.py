"""How far rounding-level differences push two FlashSAC learners' weights apart, next to what
real step bugs do to them.

``unilab_rl/tests/test_flashsac_agent.py::test_cuda_graph_replays_take_the_eager_steps`` runs a
CUDA-graphed and an eager learner side by side for 5 calls of 4 updates and compares their logs
and weights. A kernel may round differently inside a capture (another cuBLAS algorithm, another
reduction order): gradients then differ by about one float32 ulp. This probe measures, on the CPU,
what such a difference does to the weights through Adam, with no graph involved.

It builds two eager learners as that test does (same settings, seeds, PointEnv and random fill,
batches from ``sample_capturable``) and changes learner B from call ``--from-call`` on (default 2,
the call in which the graphed learner captures). Rounding models (``--modes``), of relative size r
(``--rels``), from a private generator (``--seeds``) so that both learners draw the same batches
and action noise; they touch the actor's and critic's parameters and log alpha:

* ``elem``: every gradient of B, before its optimizer step (a tensor hook), becomes
  ``g * (1 + r n)``, n ~ N(0, 1) per element;
* ``rms``: every gradient becomes ``g + r rms(g) n``: each element off by r of its tensor's RMS,
  as a sum's rounding error scales with the size of its terms, not of the result;
* ``once``: the weights themselves are scaled by ``1 + r n`` once, before call ``--from-call``;
  no later difference (r = 1e-7 is about one ulp; 1e-8 flips a few of them).

Bug variants (``--bugs``) plant what a faulty capture could do instead: rates frozen at their
value when the capture happens (``lr-frozen``), rates 1 % off (``lr+1%``), the reward scale frozen
(``scale-frozen``), no moving average of the actor (``no-actor-ema``) or of the target critic
(``no-target-ema``), one extra critic update (``extra-update``).

Printed: how much reordering the batch rows (a pure summation-order change) moves each actor
tensor's gradient, for W1 of the actor's block and the most sensitive other tensor; the critic's
and actor's learning rates after each call; then per variant the max |A - B| over actor and
critic parameters after each call (the test's drift figure) and the same in units of the
critic's rate; the logged value furthest off in units of max(1e-4 |B|, 1e-5), with its |A - B|;
for each module (actor, actor_average, critic, critic_target state dicts with batch-norm
statistics, log alpha) after the last call the share of elements beyond rtol 1e-4, atol 1e-5 and
the median and max |A - B|; and the tensors with the largest such share. r = 0 must give zeros.
On the CPU (under a second per variant)::

    PYTHONPATH=unilab/src:unilab_rl/src python benchmarks/graph_drift_probe.py
    python benchmarks/graph_drift_probe.py --modes once,rms --rels 1e-7 --seeds 1,2,3 --bugs none
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable

import torch

from unilab_rl import FlashSAC, FlashSACConfig
from unilab_rl.testing import PointEnv, fill_random, make_learner

# test_flashsac_agent.py's SMALL with the overrides of test_cuda_graph_replays_take_the_eager_steps
# (device "cpu", no graphs, no compile, float32).
SETTINGS = dict(
    max_iterations=8, learning_starts=2, buffer_size_per_env=64, batch_size=64, num_updates=4,
    actor_hidden_dim=16, critic_hidden_dim=16, actor_num_blocks=1, critic_num_blocks=1, num_bins=21,
    device="cpu", cuda_graph=False, compile=False, mixed_precision=False, actor_update_period=2,
    lr_end=1e-4, actor_ema=0.1,
)
BUGS = ("lr-frozen", "lr+1%", "scale-frozen", "no-actor-ema", "no-target-ema", "extra-update")
ATOL, RTOL = 1e-5, 1e-4  # the test's float32 tolerance per element


def add_rounding(agent: FlashSAC, mode: str, rel: float, seed: int, on: Callable[[], bool]) -> None:
    """Model rounding differences of relative size ``rel`` (``mode`` ``elem``, ``rms`` or ``once``,
    see the module docstring) while ``on()``."""
    generator = torch.Generator().manual_seed(seed)
    tensors = [*agent.actor.parameters(), *agent.critic.parameters(), agent.log_temperature]
    if mode == "once":
        update, done = agent.update, []

        def nudged_update() -> dict[str, float]:
            if on() and not done and rel > 0.0:
                with torch.no_grad():
                    for t in tensors:
                        t.mul_(1.0 + rel * torch.randn(t.shape, generator=generator, dtype=t.dtype))
                done.append(True)
            return update()

        agent.update = nudged_update
        return

    def hook(grad: torch.Tensor) -> torch.Tensor:
        if not on() or rel == 0.0:
            return grad
        noise = torch.randn(grad.shape, generator=generator, dtype=grad.dtype)
        if mode == "elem":
            return grad * (1.0 + rel * noise)
        return grad + rel * grad.pow(2).mean().sqrt() * noise

    for t in tensors:
        t.register_hook(hook)


def plant_bug(agent: FlashSAC, bug: str, on: Callable[[], bool]) -> None:
    """Make ``agent`` take faulty steps while ``on()`` (the logged rates stay the correct ones)."""
    optimizers = (agent.actor_optimizer, agent.critic_optimizer, agent.temperature_optimizer)
    held: dict = {}
    if bug in ("lr-frozen", "lr+1%"):
        set_rates = agent._set_learning_rate

        def faulty_rates() -> tuple[float, float]:
            logged = set_rates()
            if on():
                if bug == "lr+1%":
                    for o in optimizers:
                        for g in o.param_groups:
                            g["lr"] *= 1.01
                else:
                    held.setdefault("lr", [[g["lr"] for g in o.param_groups] for o in optimizers])
                    for o, rates in zip(optimizers, held["lr"]):
                        for g, rate in zip(o.param_groups, rates):
                            g["lr"] = rate
            return logged

        agent._set_learning_rate = faulty_rates
    elif bug == "scale-frozen":
        scaler = agent.reward_scaler
        scale_now = scaler.forward

        def faulty_scale(rewards: torch.Tensor) -> torch.Tensor:
            if not on():
                return scale_now(rewards)
            return rewards / held.setdefault("scale", scaler.scale().clone())

        scaler.forward = faulty_scale
    elif bug == "no-actor-ema":
        average = agent._update_actor_average
        agent._update_actor_average = lambda: None if on() else average()
    elif bug == "no-target-ema":
        step = agent._step

        def step_without_target_ema(batch, with_actor):
            if not on():
                return step(batch, with_actor)
            cfg = agent.cfg
            agent.cfg = copy.copy(cfg)
            agent.cfg.tau = 0.0  # the target stays put
            try:
                return step(batch, with_actor)
            finally:
                agent.cfg = cfg

        agent._step = step_without_target_ema
    elif bug == "extra-update":
        update = agent.update

        def update_once_more() -> dict[str, float]:
            if on() and "extra" not in held:
                held["extra"] = agent._step(agent.replay.sample(agent.cfg.batch_size), False)
            return update()

        agent.update = update_once_more
    else:
        raise ValueError(f"unknown bug {bug!r}; known: {', '.join(BUGS)}")


def run(change: Callable[[FlashSAC, Callable[[], bool]], None] | None, from_call: int, calls: int) -> list:
    """Learners A (as built) and B (``change`` applied, active from call ``from_call`` on, 1-based);
    returns for each learner its per-call records."""
    results = []
    for changed in (False, True):
        torch.manual_seed(0)
        env = PointEnv(num_envs=16)
        agent = make_learner(FlashSAC, FlashSACConfig, env, **SETTINGS)
        fill_random(agent, env, 8)
        agent.replay.sample = lambda b, mirror=None, r=agent.replay: r.sample_capturable(b, mirror)
        current = {"call": 0}
        if changed and change is not None:
            change(agent, lambda: current["call"] >= from_call)
        torch.manual_seed(1)
        records = []
        for call in range(1, calls + 1):
            current["call"] = call
            logs = agent.update()
            records.append({
                "logs": logs,
                "flat": torch.cat([p.detach().flatten() for net in (agent.actor, agent.critic)
                                   for p in net.parameters()]),
                "named": {f"{net}.{k}": p.detach().clone() for net, m in (("actor", agent.actor),
                          ("critic", agent.critic)) for k, p in m.named_parameters()},
                "compared": {
                    "actor": {k: v.clone() for k, v in agent.actor.state_dict().items()},
                    "actor_average": {k: v.clone() for k, v in agent.actor_average.state_dict().items()},
                    "critic": {k: v.clone() for k, v in agent.critic.state_dict().items()},
                    "critic_target": {k: v.clone() for k, v in agent.critic_target.state_dict().items()},
                    "log_temperature": {"": agent.log_temperature.detach().clone()},
                },
            })
            fill_random(agent, env, 1)
        results.append(records)
    return results


def worst_log(a_calls: list, b_calls: list) -> tuple[float, str, int, float]:
    """The logged value furthest from rel 1e-4, abs 1e-5: (|A - B| / max(1e-4 |B|, 1e-5), key,
    call, |A - B|)."""
    return max((abs(a["logs"][k] - b["logs"][k]) / max(RTOL * abs(b["logs"][k]), ATOL), k, call,
                abs(a["logs"][k] - b["logs"][k]))
               for call, (a, b) in enumerate(zip(a_calls, b_calls), 1) for k in a["logs"])


def summarize(label: str, results: list, top: int) -> None:
    a_calls, b_calls = results
    drift = [float((a["flat"] - b["flat"]).abs().max()) for a, b in zip(a_calls, b_calls)]
    in_lr = [d / b["logs"]["Policy/learning_rate"] for d, b in zip(drift, b_calls)]
    ratio, key, call, diff = worst_log(a_calls, b_calls)
    print(f"{label:<18} drift/call {', '.join(f'{d:.1e}' for d in drift)}  "
          f"(/lr {', '.join(f'{x:.2f}' for x in in_lr)})  "
          f"worst log {ratio:.2g}x tol ({key}, call {call}, |d| {diff:.1e})")
    parts, tensors = [], []
    for module, state in a_calls[-1]["compared"].items():
        pairs = [(k, p, b_calls[-1]["compared"][module][k]) for k, p in state.items() if p.is_floating_point()]
        diff = torch.cat([(p - q).abs().flatten() for _, p, q in pairs])
        beyond = torch.cat([((p - q).abs() > ATOL + RTOL * q.abs()).flatten() for _, p, q in pairs])
        parts.append(f"{module} {float(beyond.float().mean()):.1%} of {diff.numel()} "
                     f"(med {float(diff.median()):.0e}, max {float(diff.max()):.0e})")
        tensors += [(float(((p - q).abs() > ATOL + RTOL * q.abs()).float().mean()), float((p - q).abs().max()),
                     f"{module}.{k}" if k else module, p.numel()) for k, p, q in pairs]
    print(f"{'':<18} beyond tol: " + "; ".join(parts))
    if top > 0:
        worst = sorted(tensors, reverse=True)[:top]
        print(f"{'':<18} worst tensors: " + "; ".join(f"{name} ({n}) {share:.1%} beyond, max {d:.1e}"
                                                    for share, d, name, n in worst))


def row_order_sensitivity(seed: int = 9) -> dict[str, float]:
    """Relative change ``|g' - g| / |g|`` of each actor tensor's gradient of the actor loss when the
    batch rows come in another order (the same rows, the same reparameterization noise per row):
    a pure summation-order difference, as another GEMM or reduction algorithm makes. The learner is
    the test's after its first call; the batch one ``sample_capturable`` draw of 64 rows."""
    from unittest import mock

    from unilab_rl.algorithms.flashsac import update as flash_update

    torch.manual_seed(0)
    env = PointEnv(num_envs=16)
    agent = make_learner(FlashSAC, FlashSACConfig, env, **SETTINGS)
    fill_random(agent, env, 8)
    agent.replay.sample = lambda b, mirror=None, r=agent.replay: r.sample_capturable(b, mirror)
    torch.manual_seed(1)
    agent.update()
    batch = agent.replay.sample_capturable(64)
    rows = batch.actions.shape[0]
    noise = torch.randn(2 * rows, agent.num_actions, generator=torch.Generator().manual_seed(seed))

    def gradients(order: torch.Tensor) -> dict[str, torch.Tensor]:
        actor, critic = copy.deepcopy(agent.actor), copy.deepcopy(agent.critic)
        both = torch.cat([order, order + rows])  # the actor samples on concat(s, s')
        with mock.patch.object(torch, "randn_like", lambda t, **kw: noise[both].to(t.dtype)):
            loss, _, _ = flash_update.actor_objective(
                actor, critic, agent.log_temperature, batch.obs["actor"][order], batch.next_obs["actor"][order],
                batch.obs["critic"][order], agent.target_entropy)
        names = [n for n, _ in actor.named_parameters()]
        return dict(zip(names, torch.autograd.grad(loss, list(actor.parameters()))))

    g = gradients(torch.arange(rows))
    h = gradients(torch.randperm(rows, generator=torch.Generator().manual_seed(seed)))
    return {k: float((g[k] - h[k]).norm() / g[k].norm()) for k in g}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", default="elem,rms,once", help="comma list of rounding models: elem, rms, once")
    p.add_argument("--rels", default="0,1e-7,1e-6", help="comma list of relative noise levels r")
    p.add_argument("--seeds", default="7", help="comma list of noise-generator seeds")
    p.add_argument("--bugs", default=",".join(BUGS), help=f"comma list of {', '.join(BUGS)}, or 'none'")
    p.add_argument("--from-call", type=int, default=2, help="first changed call (1-based)")
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--top", type=int, default=2, help="tensors listed by share beyond tol, per variant")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # deterministic CPU sums, as the tests run
    variants: list[tuple[str, Callable | None]] = []
    for mode in args.modes.split(","):
        if mode not in ("elem", "rms", "once"):
            p.error(f"unknown mode {mode!r}")
        for rel in (float(x) for x in args.rels.split(",")):
            for seed in (int(s) for s in args.seeds.split(",")):
                variants.append((f"{mode} r={rel:g} s{seed}",
                                 lambda agent, on, m=mode, r=rel, s=seed: add_rounding(agent, m, r, s, on)))
    for bug in ([] if args.bugs == "none" else args.bugs.split(",")):
        if bug not in BUGS:
            p.error(f"unknown bug {bug!r}")
        variants.append((bug, lambda agent, on, b=bug: plant_bug(agent, b, on)))
    changes = row_order_sensitivity()
    w1 = "trunk.blocks.0.w1.weight"
    rest = max((v, k) for k, v in changes.items() if k != w1)
    print(f"actor gradient, batch rows reordered: relative change {changes[w1]:.1e} in {w1}, "
          f"at most {rest[0]:.1e} elsewhere ({rest[1]})")
    first = True
    for label, change in variants:
        results = run(change, args.from_call, args.calls)
        if first:
            b = results[1]
            for name, key in (("critic", "Policy/learning_rate"), ("actor ", "Policy/actor_learning_rate")):
                print(f"{name} lr after each call: " + ", ".join(f"{c['logs'][key]:.3e}" for c in b))
            print(f"actor + critic parameters: {b[0]['flat'].numel()}; B changed from call {args.from_call} of "
                  f"{args.calls} (4 updates each, actor every second); tol = atol {ATOL:g} + rtol {RTOL:g} |B|")
            first = False
        summarize(label, results, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
