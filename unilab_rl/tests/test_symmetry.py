"""Symmetry augmentation (``symmetry=True``): mirrored half batches, symmetric observation
statistics, both runtimes, FlashSAC, and the errors for an env without a mirror; SAC's and
FlashSAC's equivariant actors (``equivariant_actor=True``)."""

from __future__ import annotations

import functools

import pytest
import torch

from unilab_rl import AsyncOffPolicyRunner, FlashSAC, FlashSACConfig, OffPolicyRunner
from unilab_rl.algorithms.sac import SACConfig
from unilab_rl.algorithms.flashsac.networks import FlashActor, MLPActor
from unilab_rl.algorithms.sac.networks import Actor, squashed_gaussian_log_prob
from unilab_rl.replay import ReplayBuffer, mirror_half
from unilab_rl.testing import PointEnv, SymmetricPointEnv, fill_random, live_children
from unilab_rl.vecenv import Mirror, apply_mirror, check_mirror_pair, learner_mirror

# Spawned collectors need a picklable, module-level env factory.
make_symmetric_env = functools.partial(SymmetricPointEnv, num_envs=8, max_episode_length=5, seed=3)

MIRROR = SymmetricPointEnv().mirror




def test_mirror_half_mirrors_the_second_half_and_keeps_rewards_and_the_buffer() -> None:
    buffer = ReplayBuffer(16, {"actor": 1, "critic": 3}, 1, "cpu")
    n = 16
    obs = {"actor": torch.rand(n, 1) + 1, "critic": torch.rand(n, 3) + 1}  # all positive
    nxt = {"actor": torch.rand(n, 1) + 1, "critic": torch.rand(n, 3) + 1}
    buffer.add(obs, torch.rand(n, 1) + 1, torch.rand(n), torch.rand(n) < 0.5, nxt)
    stored = buffer.obs["actor"].clone()

    batch = buffer.sample(9, generator=torch.Generator().manual_seed(0))
    original = buffer.sample(9, generator=torch.Generator().manual_seed(0))
    mirror_half(batch, MIRROR)
    h = 9 // 2
    for g in ("actor", "critic"):
        for field in ("obs", "next_obs"):
            got, ref = getattr(batch, field)[g], getattr(original, field)[g]
            assert torch.equal(got[:h], ref[:h])
            assert torch.equal(got[h:], apply_mirror(ref[h:], MIRROR.obs[g]))
    assert torch.equal(batch.actions[h:], -original.actions[h:]) and torch.equal(batch.actions[:h], original.actions[:h])
    assert torch.equal(batch.obs["critic"][h:, 2], original.obs["critic"][h:, 2])  # t / T keeps its sign
    assert torch.equal(batch.rewards, original.rewards) and torch.equal(batch.terminated, original.terminated)
    assert torch.equal(buffer.obs["actor"], stored)  # the replay itself is untouched
    # sample(mirror=...) draws the same rows and mirrors the same half
    sampled = buffer.sample(9, generator=torch.Generator().manual_seed(0), mirror=MIRROR)
    for field in batch._fields:
        got, ref = getattr(sampled, field), getattr(batch, field)
        pairs = [(got[g], ref[g]) for g in ref] if isinstance(ref, dict) else [(got, ref)]
        assert all(torch.equal(a, b) for a, b in pairs), field


def test_sac_samples_half_mirrored_batches_and_keeps_symmetric_statistics(make_sac) -> None:
    env = SymmetricPointEnv(num_envs=8)
    sac = make_sac(env, symmetry=True, batch_size=64)
    assert sac.mirror is not None
    fill_random(sac, env, 6)

    # Statistics of observations and their mirror images: symmetric, so normalizing commutes
    # with mirroring.
    for group, normalizer in sac.obs_normalizers.items():
        perm, sign = sac.mirror.obs[group]
        torch.testing.assert_close(normalizer.mean[perm] * sign, normalizer.mean, rtol=0, atol=1e-6)
        torch.testing.assert_close(normalizer.var[perm], normalizer.var, rtol=0, atol=0)
        x = torch.randn(32, normalizer.dim)
        torch.testing.assert_close(sac.normalize(group, apply_mirror(x, sac.mirror.obs[group])),
                                   apply_mirror(sac.normalize(group, x), sac.mirror.obs[group]))
    assert int(sac.obs_normalizers["actor"].count) == 2 * 6 * 8  # each observation and its image

    # Every stored action is in [-1, 1]; replace them by positive ones to see which rows flip.
    sac.replay.actions[: len(sac.replay)] = sac.replay.actions[: len(sac.replay)].abs() + 0.01
    batch = sac.sample_batch()
    assert (batch.actions[:32] > 0).all() and (batch.actions[32:] < 0).all()

    metrics = sac.update()
    assert {"Loss/critic", "Critic/mean_q"} <= set(metrics)
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values())


def test_symmetry_off_is_unchanged(make_sac) -> None:
    env = SymmetricPointEnv(num_envs=8)
    sac = make_sac(env)
    assert sac.mirror is None
    fill_random(sac, env, 2)
    assert int(sac.obs_normalizers["actor"].count) == 2 * 8


def test_symmetry_on_an_env_without_a_mirror_is_a_clear_error(make_sac) -> None:
    with pytest.raises(ValueError, match=r"algo\.symmetry=true: SAC needs an env with a left/right mirror.*PointEnv"):
        make_sac(PointEnv(num_envs=8), symmetry=True)
    with pytest.raises(ValueError, match=r"algo\.symmetry=true: FlashSAC needs"):
        FlashSAC(PointEnv(num_envs=8), FlashSACConfig(symmetry=True), "cpu")


def test_a_mirror_that_is_not_an_involution_is_refused() -> None:
    env = SymmetricPointEnv(num_envs=4)
    bad = (torch.tensor([1, 2, 0]), torch.tensor([1.0, 1.0, 1.0]))  # a 3-cycle: not its own inverse
    env.mirror = Mirror(obs={**env.mirror.obs, "critic": bad}, actions=env.mirror.actions)
    with pytest.raises(ValueError, match="mirror of observation group 'critic': mirroring twice"):
        learner_mirror(env, "SAC", env.obs_dims, torch.device("cpu"))
    with pytest.raises(ValueError, match="sign must hold only"):
        check_mirror_pair((torch.tensor([0]), torch.tensor([0.5])), 1, "x")
    with pytest.raises(ValueError, match=r"must be \(2,\)"):
        check_mirror_pair((torch.tensor([0]), torch.tensor([1.0])), 2, "x")


def test_sync_and_async_runners_train_with_symmetry_and_agree_on_statistics(make_sac) -> None:
    iterations = 6
    sync_env = make_symmetric_env()
    sync = make_sac(sync_env, symmetry=True, learning_starts=100, block_steps=3, num_blocks=2)
    OffPolicyRunner(sync_env, sync, seed=7).learn(iterations)

    asyn = make_sac(make_symmetric_env(), symmetry=True, learning_starts=100, block_steps=3, num_blocks=2)
    AsyncOffPolicyRunner(make_symmetric_env, asyn, seed=7).learn(iterations)
    for group in sync.obs_normalizers:  # store() and store_steps() both add the mirror images
        torch.testing.assert_close(asyn.obs_normalizers[group].mean, sync.obs_normalizers[group].mean)
        torch.testing.assert_close(asyn.obs_normalizers[group].var, sync.obs_normalizers[group].var)
        assert int(asyn.obs_normalizers[group].count) == 2 * iterations * 8

    trained = make_sac(make_symmetric_env(), symmetry=True, learning_starts=2, block_steps=2, num_blocks=2)
    summary = AsyncOffPolicyRunner(make_symmetric_env, trained, seed=1).learn(5)
    assert summary.updates > 0 and trained.num_critic_updates == summary.updates
    assert live_children() == []


def test_flashsac_trains_with_symmetry() -> None:
    env = SymmetricPointEnv(num_envs=8)
    agent = FlashSAC(env, FlashSACConfig(
        learning_starts=2, buffer_size_per_env=64, batch_size=32, num_updates=2, actor_hidden_dim=16,
        critic_hidden_dim=16, actor_num_blocks=1, critic_num_blocks=1, num_bins=21, symmetry=True,
    ), "cpu")  # fmt: skip
    assert agent.mirror is not None
    summary = OffPolicyRunner(env, agent, seed=0).learn(4)
    assert summary.updates > 0


# An actor mirror with swapped pairs and sign flips: observations (7,), actions (4,).
OBS_MIRROR = (torch.tensor([0, 2, 1, 3, 5, 4, 6]), torch.tensor([1.0, 1.0, 1.0, -1.0, 1.0, 1.0, -1.0]))
ACTION_MIRROR = (torch.tensor([1, 0, 2, 3]), torch.tensor([1.0, 1.0, -1.0, -1.0]))
BOX = (torch.tensor([-1.0, -1.0, -2.0, -0.5]), torch.tensor([1.0, 1.0, 2.0, 0.5]))


def _actor(mirror) -> Actor:
    actor = Actor(7, *BOX, hidden=(16, 16), mirror=mirror)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # weights of a trained actor (the heads start at zero)
        for p in actor.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
    return actor


def test_the_equivariant_actor_commutes_with_the_mirror_and_the_plain_one_does_not() -> None:
    obs = torch.randn(32, 7, generator=torch.Generator().manual_seed(1))
    mirrored = apply_mirror(obs, OBS_MIRROR)
    plain, equivariant = _actor(None), _actor((OBS_MIRROR, ACTION_MIRROR))
    assert not plain.equivariant and equivariant.equivariant
    gap = (plain.deterministic_action(mirrored) - apply_mirror(plain.deterministic_action(obs), ACTION_MIRROR)).abs()
    assert gap.max() > 0.1  # augmentation aside, nothing makes a network equivariant

    with torch.no_grad():
        mean, log_std = equivariant(obs)
        mean_m, log_std_m = equivariant(mirrored)
        torch.testing.assert_close(mean_m, apply_mirror(mean, ACTION_MIRROR), rtol=0, atol=1e-6)
        torch.testing.assert_close(log_std_m, log_std[:, ACTION_MIRROR[0]], rtol=0, atol=1e-6)
        torch.testing.assert_close(equivariant.deterministic_action(mirrored),
                                   apply_mirror(equivariant.deterministic_action(obs), ACTION_MIRROR), rtol=0, atol=1e-6)
        # the density of a mirrored action at the mirrored observation is the same
        u = mean + log_std.exp() * torch.randn(mean.shape, generator=torch.Generator().manual_seed(2))
        logp = squashed_gaussian_log_prob(u, mean, log_std, equivariant.action_half_range)
        logp_m = squashed_gaussian_log_prob(apply_mirror(u, ACTION_MIRROR), mean_m, log_std_m, equivariant.action_half_range)
        torch.testing.assert_close(logp_m, logp, rtol=0, atol=1e-5)
    assert mean.std() > 0.1 and log_std.std() > 0.01  # not equivariant by being constant


def test_the_equivariant_actor_refuses_a_mirror_that_does_not_fit() -> None:
    with pytest.raises(ValueError, match=r"observation mirror must be \(7,\)"):
        Actor(7, *BOX, mirror=((OBS_MIRROR[0][:6], OBS_MIRROR[1][:6]), ACTION_MIRROR))
    with pytest.raises(ValueError, match="action mirror is not a signed permutation that is its own inverse"):
        Actor(7, *BOX, mirror=(OBS_MIRROR, (torch.tensor([1, 2, 3, 0]), ACTION_MIRROR[1])))
    with pytest.raises(ValueError, match="action box is not its own mirror image"):
        Actor(7, BOX[0], torch.tensor([1.0, 2.0, 2.0, 0.5]), mirror=(OBS_MIRROR, ACTION_MIRROR))
    with pytest.raises(ValueError, match=r"SACConfig\.equivariant_actor=true needs SACConfig\.symmetry=true"):
        SACConfig(equivariant_actor=True)


@pytest.mark.parametrize("equivariant", [False, True])
def test_sac_with_an_equivariant_actor_trains_to_a_mirror_equivariant_policy(make_sac, equivariant) -> None:
    env = make_symmetric_env()
    sac = make_sac(env, symmetry=True, equivariant_actor=equivariant, learning_starts=4)
    OffPolicyRunner(env, sac, seed=0).learn(40)
    assert sac.num_critic_updates > 0
    policy = sac.inference_policy()
    obs = 3.0 * torch.randn(256, 1, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        gap = (policy(apply_mirror(obs, MIRROR.obs["actor"])) - apply_mirror(policy(obs), MIRROR.actions)).abs().max()
    if equivariant:  # exactly, through the normalizer too; the checkpoint keeps the mirror
        assert gap < 1e-6 and sac.actor.equivariant
        again = make_sac(make_symmetric_env(), symmetry=True, equivariant_actor=True)
        again.load_state_dict(sac.state_dict())
        with torch.no_grad():
            torch.testing.assert_close(again.inference_policy()(obs), policy(obs), rtol=0, atol=0)
    else:  # mirrored replay rows alone leave the trained policy off the mirror
        assert gap > 1e-4 and not sac.actor.equivariant


def _flash_actor(mirror, kind: str = "residual") -> FlashActor | MLPActor:
    if kind == "mlp":
        actor = MLPActor(7, *BOX, hidden=(16, 16), mirror=mirror)
    else:
        actor = FlashActor(7, *BOX, hidden_dim=16, num_blocks=1, mirror=mirror)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # weights and batch-norm statistics of a trained actor
        for p in actor.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
        for name, b in actor.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=gen))
            elif name.endswith("running_var"):
                b.copy_(0.5 + torch.rand(b.shape, generator=gen))
    return actor


@pytest.mark.parametrize("kind", ["residual", "mlp"])
@pytest.mark.parametrize("training", [False, True])
def test_the_flashsac_equivariant_actor_commutes_with_the_mirror(training, kind) -> None:
    """With running statistics (acting, evaluation, export) and with batch statistics (the
    update), where a batch and its mirror image give the same statistics; for FlashSAC's residual
    actor and for SAC's MLP actor behind the input batch norm (``algo.actor=mlp``)."""
    obs = torch.randn(32, 7, generator=torch.Generator().manual_seed(1))
    mirrored = apply_mirror(obs, OBS_MIRROR)
    plain, equivariant = _flash_actor(None, kind), _flash_actor((OBS_MIRROR, ACTION_MIRROR), kind)
    assert not plain.equivariant and equivariant.equivariant
    with torch.no_grad():
        gap = (plain(mirrored, training)[0] - apply_mirror(plain(obs, training)[0], ACTION_MIRROR)).abs()
        assert gap.max() > 0.1  # nothing else makes the network equivariant
        mean, log_std = equivariant(obs, training)
        mean_m, log_std_m = equivariant(mirrored, training)
    torch.testing.assert_close(mean_m, apply_mirror(mean, ACTION_MIRROR), rtol=0, atol=1e-5)
    torch.testing.assert_close(log_std_m, log_std[:, ACTION_MIRROR[0]], rtol=0, atol=1e-5)
    assert mean.std() > 0.1  # not equivariant by being constant
    with pytest.raises(ValueError, match="action box is not its own mirror image"):
        actor_cls = MLPActor if kind == "mlp" else FlashActor
        actor_cls(7, BOX[0], torch.tensor([1.0, 2.0, 2.0, 0.5]), mirror=(OBS_MIRROR, ACTION_MIRROR))
    with pytest.raises(ValueError, match=r"FlashSACConfig\.equivariant_actor=true needs FlashSACConfig\.symmetry=true"):
        FlashSACConfig(equivariant_actor=True)


def test_flashsac_with_an_equivariant_actor_trains_to_a_mirror_equivariant_policy() -> None:
    cfg = dict(learning_starts=2, buffer_size_per_env=64, batch_size=32, num_updates=2, actor_hidden_dim=16,
               critic_hidden_dim=16, actor_num_blocks=1, critic_num_blocks=1, num_bins=21, symmetry=True,
               equivariant_actor=True, actor_ema=0.1)
    env = make_symmetric_env()
    agent = FlashSAC(env, FlashSACConfig(**cfg), "cpu")
    OffPolicyRunner(env, agent, seed=0).learn(10)
    assert agent.num_critic_updates > 0 and agent.actor.equivariant
    policy = agent.inference_policy()  # the averaged actor, running statistics
    obs = 3.0 * torch.randn(256, 1, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        gap = (policy(apply_mirror(obs, MIRROR.obs["actor"])) - apply_mirror(policy(obs), MIRROR.actions)).abs().max()
    assert gap < 1e-5
    again = FlashSAC(make_symmetric_env(), FlashSACConfig(**cfg), "cpu")
    again.load_state_dict(agent.state_dict())  # the checkpoint keeps the mirror
    with torch.no_grad():
        torch.testing.assert_close(again.inference_policy()(obs), policy(obs), rtol=0, atol=0)
