"""SAC learner: acting, updating, checkpoints, configuration checks."""

from __future__ import annotations

import dataclasses
import io

import pytest
import torch

from unilab_rl.algorithms.sac import SAC, SACConfig
from unilab_rl.runtime import RuntimeConfig
from unilab_rl.testing import fill_random




def test_act_stays_in_the_box_on_the_env_device(make_env, make_sac) -> None:
    env = make_env(num_envs=16)
    sac = make_sac(env)
    obs = env.reset()
    for deterministic in (False, True):
        actions = sac.act(obs["actor"] * 100, deterministic=deterministic)
        assert actions.shape == (16, 1) and actions.dtype == torch.float32 and actions.device == env.device
        assert ((actions >= env.action_low) & (actions <= env.action_high)).all()
    random = sac.random_actions(1000)
    assert ((random >= env.action_low) & (random <= env.action_high)).all()
    assert random.min() < -0.9 and random.max() > 1.9  # covers the asymmetric box [-1, 2]


def test_update_metrics_and_actor_cadence(make_env, make_sac) -> None:
    env = make_env()
    sac = make_sac(env, num_updates=1, actor_update_period=2)
    fill_random(sac, env, 4)
    first, second = sac.update(), sac.update()
    assert set(first) == {"Loss/critic", "Critic/mean_q"}  # 1 critic update: no actor update yet
    assert set(second) == {"Loss/critic", "Critic/mean_q", "Loss/actor", "Loss/alpha", "Policy/alpha", "Policy/entropy"}
    assert all(isinstance(v, float) for v in second.values())
    assert sac.num_critic_updates == 2


def test_target_network_tracks_online_critic(make_env, make_sac) -> None:
    env = make_env()
    sac = make_sac(env, tau=0.5)
    fill_random(sac, env, 4)

    @torch.no_grad()
    def distance() -> float:
        pairs = zip(sac.critic.parameters(), sac.critic_target.parameters())
        return sum(float((p - q).abs().sum()) for p, q in pairs)

    assert distance() == 0.0
    sac.update()
    assert distance() > 0.0  # moved, but only part of the way
    assert all(not p.requires_grad for p in sac.critic_target.parameters())


def test_state_dict_round_trip_gives_identical_actions(make_env, make_sac) -> None:
    env = make_env()
    sac = make_sac(env)
    fill_random(sac, env, 6)
    for _ in range(3):
        sac.update()
    sac.iteration = 7
    buffer = io.BytesIO()
    torch.save(sac.state_dict(), buffer)
    buffer.seek(0)

    torch.manual_seed(123)  # a different initialization
    restored = make_sac(env)
    restored.load_state_dict(torch.load(buffer, weights_only=True))

    obs = torch.randn(32, 1)
    assert torch.equal(sac.act(obs, deterministic=True), restored.act(obs, deterministic=True))
    torch.manual_seed(5)
    a = sac.act(obs)
    torch.manual_seed(5)
    assert torch.equal(a, restored.act(obs))
    assert restored.iteration == 7 and restored.num_critic_updates == sac.num_critic_updates
    assert restored.alpha == sac.alpha
    # Optimizer state came along: the same update on the same data keeps them identical.
    restored.replay = sac.replay
    torch.manual_seed(9)
    sac.update()
    torch.manual_seed(9)
    restored.update()
    assert torch.equal(sac.act(obs, deterministic=True), restored.act(obs, deterministic=True))


def test_inference_policy_matches_deterministic_act(make_env, make_sac) -> None:
    env = make_env()
    sac = make_sac(env)
    fill_random(sac, env, 3)  # non-trivial normalizer statistics
    obs = torch.randn(10, 1) * 3
    torch.testing.assert_close(sac.inference_policy()(obs), sac.act(obs, deterministic=True))


def test_config_is_copied_not_mutated(make_env) -> None:
    env = make_env(num_envs=4)
    cfg = SACConfig(batch_size=16, buffer_size_per_env=8, actor_hidden=(8,), critic_hidden=(8,))
    before = dataclasses.asdict(cfg)
    sac = SAC(env, cfg, torch.device("cpu"))
    sac.cfg.gamma = 0.5
    assert dataclasses.asdict(cfg) == before
    assert sac.replay.capacity == 8 * 4
    assert sac.compile_backend == "eager"  # "auto" compiles on CUDA only


def test_target_entropy_scale(make_env, make_sac) -> None:
    env = make_env()
    assert make_sac(env, target_entropy_scale=1.0).target_entropy == -1.0 * env.num_actions
    assert make_sac(env, target_entropy_scale=0.0).target_entropy == 0.0
    assert make_sac(env, target_entropy_scale=-0.5).target_entropy == 0.5 * env.num_actions  # a positive target


def test_a_target_entropy_above_the_uniform_box_is_refused(make_env, make_sac) -> None:
    """The test env's box is [-1, 2], one action: the uniform distribution has log 3 = 1.099 nats,
    the most any policy in the box can have; a target above it would raise alpha without bound."""
    env = make_env()
    assert make_sac(env, target_entropy_scale=-1.0).target_entropy == 1.0
    with pytest.raises(ValueError) as err:
        make_sac(env, target_entropy_scale=-1.2)
    assert str(err.value) == (
        "algo.target_entropy_scale=-1.2 sets a target entropy of 1.2 nats (-scale x 1 actions), above the entropy "
        "of the uniform distribution over the action box (the most a policy in it can have), so the temperature "
        "would grow without bound; expected a target <= 1.099 nats: algo.target_entropy_scale >= -1.099"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("gamma", 1.5), ("tau", 0.0), ("batch_size", 0), ("critic_reduction", "max"), ("init_temperature", 0.0),
     ("actor_hidden", ())],
)
def test_config_rejects_bad_values_naming_the_field(field: str, value) -> None:
    with pytest.raises(ValueError, match=field):
        SACConfig(**{field: value})


def test_env_without_actor_group_is_rejected(make_env, make_sac) -> None:
    env = make_env()
    env.obs_dims = {"policy": 1}
    with pytest.raises(ValueError, match="'actor'"):
        make_sac(env)


def test_symmetric_env_uses_actor_group_for_the_critic(make_env, make_sac) -> None:
    env = make_env()
    env.obs_dims = {"actor": 1}
    sac = make_sac(env)
    assert sac.critic_group == "actor" and set(sac.replay.obs_dims) == {"actor"}
    fill_random(sac, env, 3)
    assert "Loss/critic" in sac.update()


def test_cuda_graph_setting_is_checked(make_env, make_sac) -> None:
    with pytest.raises(ValueError, match=r"runtime.cuda_graph must be true, false or 'auto', got 'yes'"):
        RuntimeConfig(cuda_graph="yes")
    with pytest.raises(ValueError, match=r"runtime.compile must be true, false or 'auto', got 'yes'"):
        RuntimeConfig(compile="yes")
    with pytest.raises(ValueError, match=r"runtime.mixed_precision=true: SAC runs in float32"):
        make_sac(make_env(num_envs=4), mixed_precision=True)
    with pytest.raises(ValueError, match=r"runtime.cuda_graph=true needs a CUDA learner device, got cpu"):
        make_sac(make_env(num_envs=4), cuda_graph=True)
    env = make_env(num_envs=4)
    sac = make_sac(env, cuda_graph="auto")  # a CPU learner: eager, optimizers not capturable
    fill_random(sac, env, 3)
    assert "Loss/critic" in sac.update() and not sac.cuda_graphs
    assert not sac.critic_optimizer.param_groups[0]["capturable"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
def test_cuda_graph_replays_take_the_eager_steps(make_env, make_sac) -> None:
    """Captured steps do what the eager steps do: the same random rows (both draw with
    sample_capturable from the device generator), the same losses and the same weights after 4
    iterations, of which the first runs the warm-up steps and the second captures. The actor's
    moving average is part of the captured actor step."""
    agents = []
    for graph in (True, False):
        torch.manual_seed(0)
        env = make_env(num_envs=16)
        sac = make_sac(env, device="cuda", cuda_graph=graph, compile=False, num_updates=4, actor_update_period=2,
                       batch_size=64, symmetry=False, actor_ema=0.1)
        fill_random(sac, env, 8)
        if not graph:
            sac.sample_batch = lambda s=sac: s.replay.sample_capturable(s.cfg.batch_size, s.mirror)
        torch.manual_seed(1)
        agents.append((sac, [sac.update() for _ in range(4)]))
    (graphed, logs_g), (eager, logs_e) = agents
    assert graphed.cuda_graphs and not eager.cuda_graphs
    for a, b in zip(logs_g, logs_e):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-5), key
    nets = ("actor", "actor_average", "critic_target")
    for p, q in zip([*(p for n in nets for p in getattr(graphed, n).parameters()), graphed.log_alpha],
                    [*(p for n in nets for p in getattr(eager, n).parameters()), eager.log_alpha]):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    assert graphed.critic_optimizer.param_groups[0]["capturable"]
