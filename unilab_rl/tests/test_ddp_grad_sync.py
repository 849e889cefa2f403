"""Data-parallel hooks (:mod:`unilab_rl.distributed`) on two gloo ranks in this machine.

One spawn of two processes checks: the gradient all-reduce hook gives the update a single process
takes on the concatenated batch (three AdamW steps with clipping, tiny SAC critic); normalizer
statistics merged over ranks equal those of the concatenated batch; and SAC learners that start
from different seeds and see different data end identical after broadcast + synchronized training.
"""

from __future__ import annotations

import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from unilab_rl import distributed as ddp
from unilab_rl.algorithms.sac import SAC, SACConfig
from unilab_rl.algorithms.sac import update as sac_update
from unilab_rl.algorithms.sac.networks import Critic
from unilab_rl.normalizer import RunningMeanStd
from unilab_rl.runner import OffPolicyRunner
from unilab_rl.testing import PointEnv, make_learner

WORLD = 2
OBS, ACT, BATCH, STEPS = 5, 2, 8, 3  # BATCH rows split evenly between the ranks


def _data():
    g = torch.Generator().manual_seed(1)
    return [
        (torch.randn(BATCH, OBS, generator=g), torch.rand(BATCH, ACT, generator=g) * 2 - 1,
         torch.randn(BATCH, generator=g) * 3)
        for _ in range(STEPS)
    ]  # fmt: skip


def _critic_steps(rows: slice, grad_sync=None) -> list[torch.Tensor]:
    """STEPS AdamW steps of a tiny twin critic on rows ``rows`` of each batch; its parameters after."""
    torch.manual_seed(0)
    bound = torch.ones(ACT)
    critic = Critic(OBS, -bound, bound, (16, 16))
    opt = torch.optim.AdamW(critic.parameters(), lr=1e-2)
    for obs, actions, y in _data():
        q1, q2 = critic(obs[rows], actions[rows])
        loss = sac_update.critic_loss(q1, q2, y[rows])
        sac_update.apply_gradients(loss, opt, critic.parameters(), max_grad_norm=0.5, grad_sync=grad_sync)
    return [p.detach().clone() for p in critic.parameters()]


def _obs_batches() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    return [torch.randn(BATCH, OBS, generator=g) * (i + 1) + i for i in range(4)]


SMALL = dict(batch_size=16, num_updates=2, actor_update_period=2, buffer_size_per_env=64,
             learning_starts=2, actor_hidden=(16, 16), critic_hidden=(16, 16), device="cpu")  # fmt: skip


def _worker(rank: int, port: int, out: dict) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        half = BATCH // WORLD
        rows = slice(rank * half, (rank + 1) * half)
        params = _critic_steps(rows, grad_sync=ddp.average_gradients)

        norm = RunningMeanStd(OBS)
        for x in _obs_batches():
            norm.update(x[rows], reduce=ddp.sum_)

        # SAC: different init (seed) and different data (env seed) per rank.
        torch.manual_seed(100 + rank)
        env = PointEnv(num_envs=4, seed=rank)
        agent = make_learner(SAC, SACConfig, env, **SMALL)
        before = ddp.state_digest(agent)
        ddp.attach(agent)
        ddp.broadcast_state(agent)
        after_broadcast = ddp.state_digest(agent)
        OffPolicyRunner(env, agent, seed=rank).learn(6)
        digests = [None] * WORLD
        dist.all_gather_object(digests, (before, after_broadcast, ddp.state_digest(agent), agent.num_critic_updates))
        out[rank] = {"params": params, "norm": (norm.mean.clone(), norm.var.clone(), int(norm.count)), "digests": digests}
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_ranks_match_one_process_on_the_concatenated_batch():
    manager = mp.Manager()
    out = manager.dict()
    mp.spawn(_worker, args=(_free_port(), out), nprocs=WORLD, join=True)
    out = dict(out)

    # Gradients: average over ranks of half-batch means == full-batch mean; the steps agree.
    single = _critic_steps(slice(0, BATCH))
    for rank in range(WORLD):
        for p, q in zip(out[rank]["params"], single):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    for p, q in zip(out[0]["params"], out[1]["params"]):
        assert torch.equal(p, q)  # bit for bit across ranks
    # The hook really ran: without it the half-batch update differs.
    alone = _critic_steps(slice(0, BATCH // WORLD))
    assert any(not torch.allclose(p, q, atol=1e-6) for p, q in zip(alone, single))

    # Normalizer: merged moments == the concatenated batches, identical across ranks.
    ref = RunningMeanStd(OBS)
    for x in _obs_batches():
        ref.update(x)
    for rank in range(WORLD):
        mean, var, count = out[rank]["norm"]
        torch.testing.assert_close(mean, ref.mean, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(var, ref.var, rtol=1e-5, atol=1e-5)
        assert count == int(ref.count)
    assert torch.equal(out[0]["norm"][0], out[1]["norm"][0]) and torch.equal(out[0]["norm"][1], out[1]["norm"][1])

    # SAC: different before the broadcast, identical after it and after training with updates.
    (b0, a0, t0, n0), (b1, a1, t1, n1) = out[0]["digests"]
    assert b0 != b1
    assert a0 == a1
    assert n0 == n1 > 0
    assert t0 == t1 and t0 != a0
