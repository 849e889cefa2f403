"""``algo.actor_ema``: the moving average of the actor that SAC and FlashSAC deploy
(:class:`unilab_rl.learner.ActorCriticState`)."""

from __future__ import annotations

import pytest
import torch

from unilab_rl import FlashSAC, FlashSACConfig
from unilab_rl.algorithms.sac import SAC, SACConfig
from unilab_rl.testing import fill_random, make_learner

SMALL = {
    "sac": (SAC, SACConfig, dict(batch_size=32, buffer_size_per_env=64, actor_hidden=(16,), critic_hidden=(16,))),
    "flashsac": (FlashSAC, FlashSACConfig, dict(batch_size=32, buffer_size_per_env=64, actor_hidden_dim=16,
                                                critic_hidden_dim=16, actor_num_blocks=1, critic_num_blocks=1,
                                                num_bins=21)),
}


def make(algo: str, env, **settings):
    cls, cfg_cls, small = SMALL[algo]
    return make_learner(cls, cfg_cls, env, learning_starts=0, num_updates=1, actor_update_period=1,
                        **{**small, **settings})




def averaged_state(module: torch.nn.Module) -> torch.Tensor:
    """Parameters and floating buffers (e.g. batch-norm running statistics), flattened."""
    return torch.cat([t.detach().flatten().float() for t in [*module.parameters(), *module.buffers()]
                      if t.is_floating_point()])


@pytest.mark.parametrize("algo", ["sac", "flashsac"])
def test_the_average_follows_the_actor_by_its_rate_and_is_the_deployed_policy(make_env, algo):
    env = make_env(num_envs=8)
    assert make(algo, env).actor_average is None
    rate = 0.25
    agent = make(algo, env, actor_ema=rate)
    fill_random(agent, env, 4)
    expected = averaged_state(agent.actor_average).clone()
    assert torch.equal(expected, averaged_state(agent.actor))
    for _ in range(3):
        agent.update()  # one critic and one actor update each
        expected += rate * (averaged_state(agent.actor) - expected)
        torch.testing.assert_close(averaged_state(agent.actor_average), expected)
    assert not torch.allclose(expected, averaged_state(agent.actor))  # it lags the actor
    assert all(not p.requires_grad for p in agent.actor_average.parameters())

    obs = torch.randn(10, 1) * 3
    deployed = agent.inference_policy()(obs)
    assert deployed.shape == (10, env.num_actions)
    torch.testing.assert_close(agent.act(obs, deterministic=True), deployed)
    assert agent.deployed_actor is agent.actor_average and agent.inference_policy().actor is agent.actor_average
    assert agent.exploration_policy().actor is agent.actor  # collection explores with the online actor


@pytest.mark.parametrize("algo", ["sac", "flashsac"])
def test_the_average_round_trips_and_starts_from_the_actor_without_one(make_env, algo):
    env = make_env(num_envs=8)
    agent = make(algo, env, actor_ema=0.5)
    fill_random(agent, env, 4)
    for _ in range(2):
        agent.update()
    state = agent.state_dict()
    torch.manual_seed(123)
    restored = make(algo, env, actor_ema=0.5)
    restored.load_state_dict(state)
    obs = torch.randn(8, 1)
    assert torch.equal(restored.act(obs, deterministic=True), agent.act(obs, deterministic=True))

    del state["actor_average"]  # a checkpoint written with the average off
    torch.manual_seed(321)
    from_plain = make(algo, env, actor_ema=0.5)
    from_plain.load_state_dict(state)
    torch.testing.assert_close(averaged_state(from_plain.actor_average), averaged_state(agent.actor))
    assert "actor_average" not in make(algo, env).state_dict()


@pytest.mark.parametrize(("cfg_cls", "name"), [(SACConfig, "SACConfig"), (FlashSACConfig, "FlashSACConfig")])
@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_the_rate_is_checked(cfg_cls, name, rate):
    with pytest.raises(ValueError, match=rf"{name}.actor_ema must be in \[0, 1\] \(0: off\), got {rate}"):
        cfg_cls(actor_ema=rate)
