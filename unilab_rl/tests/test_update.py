"""SAC math: targets, squashed log-probabilities, temperature and Polyak updates."""

from __future__ import annotations

import math

import pytest
import torch

from unilab_rl.algorithms.sac import update as U
from unilab_rl.algorithms.sac.networks import Actor, Critic, squashed_gaussian_log_prob


def test_soft_q_target_cuts_bootstrap_only_on_termination() -> None:
    # Row 0 terminated, row 1 truncated (time-out: the buffer stores terminated=False and the
    # pre-reset next observation), row 2 an ordinary step.
    rewards = torch.tensor([1.0, 2.0, 3.0])
    terminated = torch.tensor([True, False, False])
    qf1_next_target = torch.tensor([5.0, 5.0, 4.0])
    qf2_next_target = torch.tensor([7.0, 3.0, 6.0])
    next_log_pi = torch.tensor([0.5, -1.0, 2.0])
    alpha, gamma = 0.1, 0.9
    # By hand, "min": row 0 -> r = 1
    #   row 1 -> 2 + 0.9 * (min(5, 3) - 0.1 * -1.0) = 2 + 0.9 * 3.1 = 4.79
    #   row 2 -> 3 + 0.9 * (min(4, 6) - 0.1 * 2.0)  = 3 + 0.9 * 3.8 = 6.42
    y = U.soft_q_target(rewards, terminated, qf1_next_target, qf2_next_target, next_log_pi, alpha, gamma, "min")
    torch.testing.assert_close(y, torch.tensor([1.0, 4.79, 6.42]))
    # "mean": row 1 -> 2 + 0.9 * (4 + 0.1) = 5.69; row 2 -> 3 + 0.9 * (5 - 0.2) = 7.32
    y = U.soft_q_target(rewards, terminated, qf1_next_target, qf2_next_target, next_log_pi, alpha, gamma, "mean")
    torch.testing.assert_close(y, torch.tensor([1.0, 5.69, 7.32]))


def _constant_critic(value1: float, value2: float) -> Critic:
    critic = Critic(2, torch.tensor([-1.0]), torch.tensor([1.0]), hidden=(8,))
    for qf, v in ((critic.qf1, value1), (critic.qf2, value2)):
        torch.nn.init.zeros_(qf[-1].weight)
        torch.nn.init.constant_(qf[-1].bias, v)
    return critic


def test_update_critic_bootstraps_from_the_target_network() -> None:
    actor = Actor(1, torch.tensor([-1.0]), torch.tensor([1.0]), hidden=(8,))
    critic = Critic(2, torch.tensor([-1.0]), torch.tensor([1.0]), hidden=(8,))
    critic_target = _constant_critic(5.0, 3.0)  # Q1' = 5, Q2' = 3 everywhere
    optimizer = torch.optim.Adam(critic.parameters())
    rewards = torch.tensor([1.0, 1.0, 1.0, 1.0])
    terminated = torch.tensor([True, False, True, False])
    out = U.update_critic(
        actor, critic, critic_target, optimizer,
        critic_obs=torch.randn(4, 2), actions=torch.zeros(4, 1), rewards=rewards, terminated=terminated,
        next_actor_obs=torch.randn(4, 1), next_critic_obs=torch.randn(4, 2),
        alpha=torch.tensor(0.0), gamma=0.5, reduction="min",
    )
    # Targets: terminated rows 1; others 1 + 0.5 * min(5, 3) = 2.5; mean 1.75.
    torch.testing.assert_close(out["next_q_value"], torch.tensor(1.75))
    assert all(not v.requires_grad for v in out.values())


def test_critic_loss_decreases_towards_a_fixed_target() -> None:
    torch.manual_seed(0)
    low, high = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 4.0])
    actor = Actor(3, low, high, hidden=(16,))
    critic = Critic(3, low, high, (16, 16))
    target = Critic(3, low, high, (16, 16)).requires_grad_(False)
    optimizer = torch.optim.Adam(critic.parameters(), lr=1e-2)
    batch = dict(
        critic_obs=torch.randn(64, 3), actions=low + (high - low) * torch.rand(64, 2), rewards=torch.randn(64),
        terminated=torch.zeros(64, dtype=torch.bool), next_actor_obs=torch.randn(64, 3), next_critic_obs=torch.randn(64, 3),
    )
    losses = [
        float(U.update_critic(actor, critic, target, optimizer, **batch, alpha=torch.tensor(0.0), gamma=0.0)["critic_loss"])
        for _ in range(100)
    ]
    assert losses[-1] < 0.2 * losses[0]


@pytest.mark.parametrize(("low", "high"), [(-1.0, 1.0), (-1.0, 2.0), (0.0, 0.1)])
def test_squashed_log_prob_matches_numerical_change_of_variables(low: float, high: float) -> None:
    dtype = torch.float64
    centre, half = (high + low) / 2, (high - low) / 2
    mean, log_std = torch.tensor([0.3], dtype=dtype), torch.tensor([math.log(0.7)], dtype=dtype)
    a = torch.linspace(low, high, 20001, dtype=dtype)[1:-1]  # (K,) interior of the box
    inner = (a - low > 0.01 * (high - low)) & (high - a > 0.01 * (high - low))  # finite differences fail at the faces
    u = torch.atanh((a - centre) / half)  # (K,)

    log_p = squashed_gaussian_log_prob(u[:, None], mean, log_std, torch.tensor([half], dtype=dtype))

    # Reference: p_a(a) = p_u(u(a)) |du/da|, with du/da by central finite differences.
    h = 1e-6 * (high - low)
    du_da = (torch.atanh((a + h - centre) / half) - torch.atanh((a - h - centre) / half)) / (2 * h)
    log_p_u = torch.distributions.Normal(mean, log_std.exp()).log_prob(u)
    torch.testing.assert_close(log_p[inner], (log_p_u + du_da.log())[inner], rtol=1e-6, atol=1e-6)
    # And it is a density over the box: integrates to 1.
    assert torch.trapezoid(log_p.exp(), a).item() == pytest.approx(1.0, abs=1e-3)


def test_actor_sample_log_prob_and_box() -> None:
    torch.manual_seed(0)
    low, high = torch.tensor([-1.0, 0.0, 10.0]), torch.tensor([2.0, 0.5, 30.0])
    actor = Actor(4, low, high, hidden=(16,))
    torch.nn.init.normal_(actor.mean_head.weight, std=0.3)  # move away from the zero init
    obs = torch.randn(256, 4)
    actions, log_prob = actor.sample(obs)
    assert actions.shape == (256, 3) and log_prob.shape == (256,)
    assert ((actions >= low) & (actions <= high)).all()
    # Recover u from the action and recompute the density with torch.distributions.
    mean, log_std = actor(obs)
    u = torch.atanh(((actions - actor.action_centre) / actor.action_half_range).double().clamp(-1 + 1e-12, 1 - 1e-12))
    ref = (
        torch.distributions.Normal(mean.double(), log_std.double().exp()).log_prob(u)
        - torch.log(actor.action_half_range.double() * (1 - torch.tanh(u) ** 2))
    ).sum(-1)
    torch.testing.assert_close(log_prob.double(), ref, rtol=1e-3, atol=1e-3)
    # Deterministic action is the squashed mean, and lies in the box.
    torch.testing.assert_close(actor.deterministic_action(obs), actor.action_centre + actor.action_half_range * torch.tanh(mean))


@pytest.mark.parametrize("equivariant", [False, True])
def test_actor_explore_draws_samples_action_bit_for_bit(equivariant: bool) -> None:
    # The collectors act with explore(); learning's sample() must draw the same action from the
    # same RNG state, so a run's replay data do not depend on which of the two acted.
    from unilab_rl.algorithms.sac.networks import ExplorationPolicy

    low, high = torch.tensor([-1.0, -1.0, 10.0, -2.0]), torch.tensor([2.0, 2.0, 30.0, 2.0])
    mirror = None
    if equivariant:  # left/right swap of observations 0, 1 and actions 0, 1; sign flips on a
        # symmetric observation and a symmetric action box
        obs_mirror = (torch.tensor([1, 0, 2, 3, 4]), torch.tensor([1.0, 1.0, -1.0, 1.0, 1.0]))
        mirror = (obs_mirror, (torch.tensor([1, 0, 2, 3]), torch.tensor([1.0, 1.0, 1.0, -1.0])))
    torch.manual_seed(0)
    actor = Actor(5, low, high, hidden=(16,), mirror=mirror)
    torch.nn.init.normal_(actor.mean_head.weight, std=0.3)
    obs = torch.randn(64, 5)
    torch.manual_seed(7)
    sampled, _ = actor.sample(obs)
    torch.manual_seed(7)
    explored = actor.explore(obs)
    torch.manual_seed(7)
    collected = ExplorationPolicy(actor, None)(obs)
    assert torch.equal(sampled, explored) and torch.equal(sampled, collected)
    torch.manual_seed(8)
    assert not torch.equal(actor.explore(obs), explored)  # the draw is random, not fixed


def test_actor_log_std_stays_in_bounds() -> None:
    actor = Actor(2, torch.tensor([-1.0]), torch.tensor([1.0]), hidden=(8,), log_std_min=-5.0, log_std_max=0.0)
    torch.nn.init.normal_(actor.log_std_head.weight, std=100.0)
    _, log_std = actor(torch.randn(1000, 2) * 10)
    assert log_std.min() >= -5.0 and log_std.max() <= 0.0


def test_bad_action_box_is_rejected() -> None:
    with pytest.raises(ValueError, match="exceed"):
        Actor(2, torch.tensor([0.0, 1.0]), torch.tensor([1.0, 1.0]))
    with pytest.raises(ValueError, match="finite"):
        Critic(2, torch.tensor([-math.inf]), torch.tensor([1.0]))


@pytest.mark.parametrize(("log_pi", "direction"), [(5.0, 1.0), (-5.0, -1.0)])
def test_temperature_rises_when_entropy_is_below_target(log_pi: float, direction: float) -> None:
    # Entropy estimate -log_pi = -5 (below the target 0) must raise alpha; +5 must lower it.
    log_alpha = torch.tensor(math.log(0.1), requires_grad=True)
    optimizer = torch.optim.SGD([log_alpha], lr=0.1)
    before = log_alpha.item()
    out = U.update_temperature(log_alpha, optimizer, torch.full((16,), log_pi), target_entropy=0.0)
    assert math.copysign(1.0, log_alpha.item() - before) == direction
    assert out["alpha"].item() == pytest.approx(math.exp(log_alpha.item()))


def test_polyak_update() -> None:
    target = [torch.zeros(3), torch.full((2, 2), 4.0)]
    online = [torch.ones(3), torch.zeros(2, 2)]
    U.polyak_update(target, online, tau=0.25)
    torch.testing.assert_close(target[0], torch.full((3,), 0.25))  # 0.75 * 0 + 0.25 * 1
    torch.testing.assert_close(target[1], torch.full((2, 2), 3.0))  # 0.75 * 4 + 0.25 * 0
    U.polyak_update(target, online, tau=1.0)
    torch.testing.assert_close(target[0], online[0])


def test_actor_loss_prefers_higher_q_and_entropy() -> None:
    q_low, q_high = torch.zeros(4), torch.ones(4)
    log_pi = torch.zeros(4)
    assert U.actor_loss(log_pi, q_high, q_high, 0.1) < U.actor_loss(log_pi, q_low, q_low, 0.1)
    assert U.actor_loss(log_pi - 1, q_low, q_low, 0.1) < U.actor_loss(log_pi, q_low, q_low, 0.1)
    # "min" takes the pessimistic estimate, "mean" the average.
    assert U.actor_loss(log_pi, q_low, q_high, 0.0, "min") == 0.0
    assert U.actor_loss(log_pi, q_low, q_high, 0.0, "mean") == -0.5


def test_actor_step_moves_actor_and_alpha_only() -> None:
    low, high = torch.tensor([-1.0]), torch.tensor([1.0])
    actor, critic = Actor(2, low, high, hidden=(8,)), Critic(3, low, high, hidden=(8,))
    log_alpha = torch.tensor(0.0, requires_grad=True)
    actor_opt, alpha_opt = torch.optim.SGD(actor.parameters(), lr=0.1), torch.optim.SGD([log_alpha], lr=0.1)
    critic_before = [p.detach().clone() for p in critic.parameters()]
    actor_before = [p.detach().clone() for p in actor.parameters()]
    out = U.update_actor_and_temperature(
        actor, critic, log_alpha, actor_opt, alpha_opt, torch.randn(32, 2), torch.randn(32, 3), target_entropy=0.0
    )
    assert set(out) == {"actor_loss", "alpha_loss", "alpha", "entropy"}
    assert all(p.grad is None for p in critic.parameters())  # no gradient leaks into the critic
    assert all(torch.equal(p, q) for p, q in zip(critic.parameters(), critic_before))
    assert any(not torch.equal(p, q) for p, q in zip(actor.parameters(), actor_before))
    assert log_alpha.item() != 0.0
