"""FlashSAC update math and helpers: the categorical projection against a naive loop, the scalar
critic's TD target and loss, reward scaling, the entropy target, held exploration noise, the
weight projection and the lr schedule."""

from __future__ import annotations

import math

import pytest
import torch

from unilab_rl.algorithms.flashsac import update as fu
from unilab_rl.algorithms.flashsac.exploration import HeldNoise, RewardScaler, truncated_zeta_pmf
from unilab_rl.algorithms.flashsac.networks import (
    CategoricalCritic,
    FlashActor,
    MLPCritic,
    TrunkCritic,
    UnitBatchNorm,
    UnitLinear,
    UnitRMSNorm,
    WeightProjection,
    normalize_parameters,
)


def naive_projection(probs, rewards, terminated, entropy_term, gamma, support):
    """C51's projection written atom by atom (Bellemare et al. 2017, algorithm 1)."""
    batch, k = probs.shape
    v_min, v_max = float(support[0]), float(support[-1])
    dz = (v_max - v_min) / (k - 1)
    out = torch.zeros(batch, k, dtype=torch.float64)
    for i in range(batch):
        for j in range(k):
            z = float(rewards[i]) + gamma * (0.0 if terminated[i] else 1.0) * (float(support[j]) - float(entropy_term[i]))
            z = min(max(z, v_min), v_max)
            b = (z - v_min) / dz
            lo = math.floor(b)
            frac = b - lo
            out[i, lo] += float(probs[i, j]) * (1 - frac)
            if frac > 0:
                out[i, lo + 1] += float(probs[i, j]) * frac
    return out


def test_projection_by_hand_on_three_atoms():
    # Support {-1, 0, 1}, all mass on atom 0 (z = 0), r = 0.25, gamma = 0.5, no entropy term:
    # z' = 0.25 + 0.5 * 0 = 0.25 -> b = 1.25: 0.75 to atom 1 (z = 0), 0.25 to atom 2 (z = 1).
    support = torch.tensor([-1.0, 0.0, 1.0])
    probs = torch.tensor([[0.0, 1.0, 0.0]])
    target = fu.categorical_td_target(probs, torch.tensor([0.25]), torch.tensor([False]), torch.zeros(1), 0.5, support)
    torch.testing.assert_close(target, torch.tensor([[0.0, 0.75, 0.25]]))
    # Terminated: z' = r for every atom, so all mass lands around r = 0.25 whatever the next distribution.
    probs = torch.tensor([[0.2, 0.3, 0.5]])
    target = fu.categorical_td_target(probs, torch.tensor([0.25]), torch.tensor([True]), torch.zeros(1), 0.5, support)
    torch.testing.assert_close(target, torch.tensor([[0.0, 0.75, 0.25]]))


def test_projection_conserves_mass_and_matches_a_naive_loop():
    gen = torch.Generator().manual_seed(0)
    support = torch.linspace(-5, 5, 11)
    probs = torch.softmax(torch.randn(6, 11, generator=gen) * 2, dim=-1)
    rewards = torch.tensor([0.0, 0.3, -1.7, 4.9, -6.0, 0.05])  # includes values pushing atoms off the support
    terminated = torch.tensor([False, False, True, False, False, True])
    entropy_term = torch.tensor([0.0, 0.1, 0.2, -0.4, 0.0, 0.3])
    target = fu.categorical_td_target(probs, rewards, terminated, entropy_term, 0.97, support)
    assert target.shape == (6, 11) and target.dtype == torch.float32
    assert (target >= 0).all()
    torch.testing.assert_close(target.sum(-1), torch.ones(6))
    want = naive_projection(probs, rewards, terminated, entropy_term, 0.97, support)
    torch.testing.assert_close(target.double(), want, atol=1e-6, rtol=0)


def naive_hl_gauss(value, support, sigma_bins):
    """HL-Gauss written bin by bin with math.erf: the mass of N(y, sigma^2) on each atom's bin,
    over the mass on the whole support."""
    k = len(support)
    dz = (float(support[-1]) - float(support[0])) / (k - 1)
    y = min(max(value, float(support[0])), float(support[-1]))
    sigma = sigma_bins * dz
    cdf = [0.5 * (1 + math.erf((float(support[0]) + (j - 0.5) * dz - y) / (sigma * math.sqrt(2)))) for j in range(k + 1)]
    return [(cdf[j + 1] - cdf[j]) / (cdf[-1] - cdf[0]) for j in range(k)]


def test_hl_gauss_target_matches_a_naive_loop_sums_to_one_and_keeps_the_mean():
    support = torch.linspace(-5, 5, 101)
    values = torch.tensor([0.0, 0.123, -3.31, 4.2, 7.0, -9.0])  # the last two past the support's ends
    target = fu.hl_gauss_target(values, support, 0.75)
    assert target.shape == (6, 101) and target.dtype == torch.float32 and (target >= 0).all()
    torch.testing.assert_close(target.sum(-1), torch.ones(6))
    want = torch.tensor([naive_hl_gauss(float(v), support, 0.75) for v in values])
    torch.testing.assert_close(target, want, atol=5e-6, rtol=0)  # float32 differences of CDFs
    # Inside the support the mean is the target (to float32 rounding); past an end the mass sits at that end.
    means = (target * support).sum(-1)
    torch.testing.assert_close(means[:4], values[:4], atol=1e-4, rtol=0)
    assert target[4].argmax() == 100 and target[5].argmax() == 0
    # sigma in bin widths: at 0.75 about 49 % of the mass is on the nearest atom (2 Phi(0.5/0.75) - 1).
    assert float(target[0, 50]) == pytest.approx(math.erf(0.5 / 0.75 / math.sqrt(2)), abs=1e-5)
    wider = fu.hl_gauss_target(values[:1], support, 2.0)
    assert float(wider[0, 50]) < float(target[0, 50])
    # bfloat16 targets (as under autocast) get float32 bins: rows still sum to 1 and keep the mean.
    half = fu.hl_gauss_target(values.bfloat16(), support, 0.75)
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), fu.hl_gauss_target(values.bfloat16().float(), support, 0.75),
                               atol=4e-3, rtol=0)


def test_hl_gauss_critic_target_is_centred_on_the_scalar_soft_td_target(monkeypatch):
    """critic_objective(target="hl_gauss") spreads the scalar backup of the chosen next
    distribution, r + gamma (1 - terminated) (E[Z'] - alpha log pi'), over the atoms."""
    torch.manual_seed(0)
    actor = FlashActor(3, -torch.ones(2), torch.ones(2), hidden_dim=16, num_blocks=1)
    critic = CategoricalCritic(4, 2, hidden_dim=16, num_blocks=1, num_bins=51, v_min=-5.0, v_max=5.0)
    critic_target = CategoricalCritic(4, 2, hidden_dim=16, num_blocks=1, num_bins=51, v_min=-5.0, v_max=5.0)
    critic_target.load_state_dict(critic.state_dict())
    b = 8
    args = (actor, critic, critic_target, torch.randn(b, 4), torch.rand(b, 2) * 2 - 1, torch.randn(b),
            torch.tensor([False] * 6 + [True] * 2), torch.randn(b, 3), torch.randn(b, 4), torch.tensor(0.05), 0.9)
    seen = {}
    original = fu.hl_gauss_target
    monkeypatch.setattr(fu, "hl_gauss_target",
                        lambda values, support, sigma: seen.update(values=values, sigma=sigma) or original(values, support, sigma))
    with pytest.raises(ValueError, match=r"target must be 'projected' or 'hl_gauss', got 'gauss'"):
        fu.critic_objective(*args, target="gauss")
    torch.manual_seed(1)
    loss, info = fu.critic_objective(*args, target="hl_gauss", hl_gauss_sigma=0.5)
    assert seen["sigma"] == 0.5 and torch.isfinite(loss)
    # The same a' ~ pi(s') and the same target-critic pass, by hand.
    _, _, _, obs, actions, rewards, terminated, next_actor, next_critic, alpha, gamma = args
    torch.manual_seed(1)
    with torch.no_grad():
        next_actions, next_log_pi = actor.sample(next_actor, training=False)
        q_all, log_probs_all = critic_target(torch.cat([obs, next_critic]), torch.cat([actions, next_actions]), training=True)
        chosen = fu.select_min_q_distribution(q_all[:, b:], log_probs_all[:, b:]).exp()
        want = rewards + gamma * (~terminated).float() * ((chosen * critic.support).sum(-1) - alpha * next_log_pi)
    torch.testing.assert_close(seen["values"], want)
    # The histogram's mean is the target to within its discretization (at sigma = 0.5 bins, up to
    # 0.0023 bin widths of 0.2) and the renormalization near the support's ends.
    assert float(want.abs().max()) < 4.5
    torch.testing.assert_close(info["target_q"], want.mean(), atol=1e-3, rtol=0)


def test_min_q_distribution_is_chosen_per_row():
    log_probs = torch.log_softmax(torch.randn(2, 4, 5), dim=-1)
    q = torch.tensor([[0.0, 1.0, -1.0, 2.0], [0.5, 0.5, 0.0, 1.0]])
    chosen = fu.select_min_q_distribution(q, log_probs)
    for row, critic in enumerate([0, 1, 0, 1]):
        torch.testing.assert_close(chosen[row], log_probs[critic, row])


def test_scalar_td_target_by_hand():
    # Two critics, three rows; gamma = 0.9 ** 3 (a 3-step bootstrap), alpha = 0.2.
    next_q = torch.tensor([[1.0, 5.0, -2.0], [3.0, 4.0, 0.0]])  # min over critics: 1, 4, -2
    next_log_pi = torch.tensor([0.5, -1.0, 2.0])  # soft values: 1 - 0.1, 4 + 0.2, -2 - 0.4
    rewards = torch.tensor([1.0, -0.5, 2.0])
    terminated = torch.tensor([False, True, False])  # row 1 does not bootstrap
    y = fu.scalar_td_target(next_q, next_log_pi, rewards, terminated, 0.2, 0.9**3)
    torch.testing.assert_close(y, torch.tensor([1.0 + 0.729 * 0.9, -0.5, 2.0 + 0.729 * -2.4]))
    assert y.shape == (3,) and y.dtype == torch.float32
    # The same as SAC's soft target with clipped double Q.
    from unilab_rl.algorithms.sac.update import soft_q_target

    gen = torch.Generator().manual_seed(1)
    q, log_pi, r = torch.randn(2, 16, generator=gen), torch.randn(16, generator=gen), torch.randn(16, generator=gen)
    done = torch.rand(16, generator=gen) < 0.3
    torch.testing.assert_close(fu.scalar_td_target(q, log_pi, r, done, 0.05, 0.97),
                               soft_q_target(r, done, q[0], q[1], log_pi, 0.05, 0.97, "min"))


def test_scalar_critic_loss_is_sacs_sum_of_mean_squared_errors():
    from unilab_rl.algorithms.sac.update import critic_loss as sac_critic_loss

    q, y = torch.tensor([[1.0, 2.0], [0.0, 4.0]]), torch.tensor([1.0, 3.0])
    # critic 0: (0 + 1) / 2 = 0.5; critic 1: (1 + 1) / 2 = 1.0; summed over critics.
    assert float(fu.scalar_critic_loss(q, y)) == pytest.approx(1.5)
    q, y = torch.randn(2, 32), torch.randn(32)
    torch.testing.assert_close(fu.scalar_critic_loss(q, y), sac_critic_loss(q[0], q[1], y))


def test_mlp_critic_shapes_and_batch_norm_modes():
    critic = MLPCritic(9, 3, hidden=(16, 8))
    obs, action = torch.randn(10, 9) * 4 + 2, torch.rand(10, 3)
    q, extra = critic(obs, action, training=False)
    assert q.shape == (2, 10) and q.dtype == torch.float32 and extra is None
    assert not torch.equal(q[0], q[1])  # two independently initialized critics
    before = critic.input_norm.running_mean.clone()
    critic(obs, action, training=False)
    assert torch.equal(critic.input_norm.running_mean, before)
    critic(obs, action, training=True)
    assert not torch.equal(critic.input_norm.running_mean, before)
    # Training mode normalizes with the batch's statistics: a shift of every input row by the
    # same vector changes nothing.
    q_train, _ = critic(obs, action, training=True)
    q_shifted, _ = critic(obs + 5.0, action - 1.0, training=True)
    torch.testing.assert_close(q_train, q_shifted, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="MLPCritic needs widths >= 1"):
        MLPCritic(9, 3, hidden=())


def test_trunk_critic_shapes_batch_norm_modes_and_head():
    critic = TrunkCritic(9, 3, hidden_dim=16, num_blocks=1)
    obs, action = torch.randn(10, 9) * 4 + 2, torch.rand(10, 3)
    q, extra = critic(obs, action, training=False)
    assert q.shape == (2, 10) and q.dtype == torch.float32 and extra is None
    assert not torch.equal(q[0], q[1])  # two independently initialized critics
    # q_e = w_e . trunk_e(x) + b_e
    h = critic.trunk(torch.cat([obs, action], -1).expand(2, -1, -1), False)
    torch.testing.assert_close(q, torch.einsum("ebh,eh->eb", h, critic.head_weight) + critic.head_bias[:, None])
    before = critic.trunk.input_norm.running_mean.clone()
    critic(obs, action, training=True)
    assert not torch.equal(critic.trunk.input_norm.running_mean, before)
    # The head is outside the projection; every trunk layer is inside it.
    projection = WeightProjection(critic)
    assert not any(t is critic.head_weight for t in projection.rows + projection.scales)
    assert len(projection.rows) == 3  # the embedding and the block's two linear maps


def test_unified_entropy_target_matches_the_paper_for_29_unit_dofs():
    # arXiv 2604.04539's unified target: -13.87 nats for 29 DoF at sigma 0.15 (unit action range).
    assert fu.unified_target_entropy(29, 0.15) == pytest.approx(-13.87, abs=0.01)
    assert fu.unified_target_entropy(3, 0.3) == pytest.approx(fu.unified_target_entropy(3, 0.15) + 3 * math.log(2.0))


def test_reward_scaler_tracks_discounted_returns_and_bounds_them():
    scaler = RewardScaler(gamma=0.5, normalized_g_max=5.0)
    # Two envs, env 0 done at step 2. G <- gamma (1 - done) G + r with the step's own done (as the
    # official code and gymnasium's NormalizeReward): step 1: [1, 2]; step 2: [0 + 1, 0.5 * 2 + 2]
    # = [1, 3]; step 3: [0.5 * 1 + 1, 0.5 * 3 + 2] = [1.5, 3.5].
    for done in ([False, False], [True, False], [False, False]):
        scaler.update(torch.tensor([1.0, 2.0]), torch.tensor(done))
    torch.testing.assert_close(scaler.returns, torch.tensor([1.5, 3.5]))
    assert float(scaler.return_abs_max) == 3.5
    seen = torch.tensor([1.0, 2.0, 1.0, 3.0, 1.5, 3.5])
    torch.testing.assert_close(scaler.return_stats.var, seen.var(unbiased=False).reshape(1))
    # The divisor is the return std here (std 0.96 > 3.5 / 5 = 0.7).
    scale = math.sqrt(float(seen.var(unbiased=False)))
    torch.testing.assert_close(scaler(torch.tensor([1.0, -2.0])), torch.tensor([1.0, -2.0]) / scale)

    # Large constant returns (zero variance, gamma 0 so G = r = 10): max|G| / G_max = 2 wins, and the
    # scaled return 10 / 2 is exactly the support's edge.
    big = RewardScaler(gamma=0.0, normalized_g_max=5.0)
    for _ in range(5):
        big.update(torch.full((4,), 10.0), torch.zeros(4, dtype=torch.bool))
    assert float(big.scale()) == pytest.approx(2.0)
    assert float(big.returns.max() / big.scale()) == pytest.approx(5.0)
    state = big.state_dict()
    assert set(state) == {"return_abs_max", "return_stats.mean", "return_stats.var", "return_stats.count"}


def test_held_noise_is_held_for_the_sampled_number_of_steps():
    torch.manual_seed(0)
    noise = HeldNoise(3, exponent=2.0, max_k=16, generator=torch.Generator().manual_seed(1))
    lengths, calls = [], 0
    while len(lengths) < 200:
        first = noise(4).clone()
        k = noise.repeat
        for _ in range(k - 1):  # the same noise for the rest of the k steps
            assert torch.equal(noise(4), first)
        calls += k
        lengths.append(k)
    assert all(1 <= k <= 16 for k in lengths)
    # Fresh noise after k steps (a repeat of the same values would be a bug).
    assert not torch.equal(noise(4), first)
    # The empirical law is the truncated Zeta(2): P(1) = 1 / sum_{k<=16} k^-2 = 0.631.
    pmf = truncated_zeta_pmf(2.0, 16)
    assert float(pmf[0]) == pytest.approx(1 / sum(k**-2 for k in range(1, 17)))
    assert abs(sum(k == 1 for k in lengths) / len(lengths) - float(pmf[0])) < 0.1
    off = HeldNoise(3, enabled=False)
    a, b = off(4).clone(), off(4).clone()
    assert not torch.equal(a, b)


def test_weight_projection_keeps_unit_norms_after_an_optimizer_step():
    critic = CategoricalCritic(5, 2, hidden_dim=8, num_blocks=1, num_bins=11)
    optimizer = torch.optim.Adam(critic.parameters(), lr=0.1)
    q, log_probs = critic(torch.randn(16, 5), torch.randn(16, 2), training=True)
    (q.sum() + log_probs.mean()).backward()
    optimizer.step()
    linears = [m for m in critic.modules() if isinstance(m, UnitLinear)]
    assert any((m.weight.norm(dim=-1) - 1).abs().max() > 1e-3 for m in linears)  # the step left the sphere
    normalize_parameters(critic)
    for m in linears:
        torch.testing.assert_close(m.weight.norm(dim=-1), torch.ones(m.weight.shape[:-1]))
    for m in critic.modules():
        if isinstance(m, UnitBatchNorm):
            d = m.weight.shape[-1]
            torch.testing.assert_close(torch.cat([m.weight, m.bias], -1).norm(dim=-1), torch.full(m.weight.shape[:-1], d**0.5))
        if isinstance(m, UnitRMSNorm):
            d = m.weight.shape[-1]
            torch.testing.assert_close(m.weight.norm(dim=-1), torch.full(m.weight.shape[:-1], d**0.5))


def test_network_shapes_and_dtypes():
    low, high = torch.tensor([-1.0, 0.0, -2.0]), torch.tensor([1.0, 2.0, 2.0])
    actor = FlashActor(7, low, high, hidden_dim=16, num_blocks=2, entropy_units="squashed")
    obs = torch.randn(10, 7)
    mean, log_std = actor(obs, training=True)
    assert mean.shape == log_std.shape == (10, 3) and mean.dtype == torch.float32
    assert (log_std >= -10).all() and (log_std <= 2).all()
    torch.manual_seed(3)
    action, log_prob = actor.sample(obs, training=False)
    assert action.shape == (10, 3) and log_prob.shape == (10,)
    # log pi is the density of tanh(u) in [-1, 1] units: the box's log-volume is not in it.
    torch.manual_seed(3)
    mean, log_std = actor(obs, training=False)
    u = mean + log_std.exp() * torch.randn_like(mean)
    squashed = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean.double(), log_std.exp().double()), [torch.distributions.TanhTransform()]
    )
    torch.testing.assert_close(log_prob.double(), squashed.log_prob(torch.tanh(u.double()).clamp(-1 + 1e-12, 1 - 1e-12)).sum(-1), rtol=1e-4, atol=1e-4)
    assert (action >= low).all() and (action <= high).all()
    assert actor.deterministic_action(obs).shape == (10, 3)
    critic = CategoricalCritic(9, 3, hidden_dim=16, num_blocks=2, num_bins=101)
    q, log_probs = critic(torch.randn(10, 9), action, training=False)
    assert q.shape == (2, 10) and log_probs.shape == (2, 10, 101) and q.dtype == torch.float32
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(2, 10))
    assert (q.abs() <= 5).all()
    # Training mode updates the running statistics; evaluation mode does not.
    before = actor.trunk.input_norm.running_mean.clone()
    actor(obs, training=False)
    assert torch.equal(actor.trunk.input_norm.running_mean, before)
    actor(obs + 3.0, training=True)
    assert not torch.equal(actor.trunk.input_norm.running_mean, before)


def test_ensemble_batch_norm_matches_torch_per_member():
    bn = UnitBatchNorm(4, ensemble=2, momentum=0.1)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-1, 1)
    x = torch.randn(2, 32, 4) * 3 + 1
    y = bn(x, training=True)
    for e in range(2):
        ref = torch.nn.BatchNorm1d(4, momentum=0.1)
        with torch.no_grad():
            ref.weight.copy_(bn.weight[e])
            ref.bias.copy_(bn.bias[e])
        torch.testing.assert_close(y[e], ref(x[e]), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(bn.running_mean[e], ref.running_mean)
        torch.testing.assert_close(bn.running_var[e], ref.running_var)


def test_cosine_learning_rate():
    assert fu.cosine_learning_rate(0, 100, 3e-4, 1.5e-4) == pytest.approx(3e-4)
    assert fu.cosine_learning_rate(50, 100, 3e-4, 1.5e-4) == pytest.approx(2.25e-4)
    assert fu.cosine_learning_rate(100, 100, 3e-4, 1.5e-4) == pytest.approx(1.5e-4)
    assert fu.cosine_learning_rate(500, 100, 3e-4, 1.5e-4) == pytest.approx(1.5e-4)


def naive_n_step(rewards, terminated, truncated, next_obs, n, gamma, anchor):
    """The n-step transition of one env anchored at step ``anchor``, by a plain loop over its steps."""
    total, discount = 0.0, 1.0
    for k in range(anchor, anchor + n):
        total += discount * float(rewards[k])
        discount *= gamma
        if terminated[k] or truncated[k] or k == anchor + n - 1:
            return total, bool(terminated[k]), next_obs[k]
    raise AssertionError("unreachable")


def test_n_step_window_matches_a_plain_loop_across_episode_ends():
    from unilab_rl.algorithms.flashsac.nstep import NStepWindow

    n, gamma, steps = 3, 0.9, 7
    # Env 0 runs on; env 1 terminates at step 1; env 2 times out at step 2 and terminates at step 5.
    rewards = torch.arange(steps * 3, dtype=torch.float32).view(steps, 3) / 10
    terminated = torch.zeros(steps, 3, dtype=torch.bool)
    truncated = torch.zeros(steps, 3, dtype=torch.bool)
    terminated[1, 1] = terminated[5, 2] = True
    truncated[2, 2] = True
    obs = torch.randn(steps, 3, 4)
    next_obs = torch.randn(steps, 3, 4)
    actions = torch.randn(steps, 3, 2)
    window = NStepWindow(n, gamma)
    rows = [window.push({"actor": obs[t]}, actions[t], rewards[t], terminated[t], truncated[t],
                        {"actor": next_obs[t]}) for t in range(steps)]
    assert rows[: n - 1] == [None] * (n - 1)
    for t, row in enumerate(rows[n - 1 :]):  # anchored at step t
        row_obs, row_actions, row_rewards, row_terminated, row_next = row
        torch.testing.assert_close(row_obs["actor"], obs[t])
        torch.testing.assert_close(row_actions, actions[t])
        for env in range(3):
            reward, term, nxt = naive_n_step(rewards[:, env], terminated[:, env], truncated[:, env],
                                             next_obs[:, env], n, gamma, t)
            assert float(row_rewards[env]) == pytest.approx(reward, rel=1e-6), (t, env)
            assert bool(row_terminated[env]) == term, (t, env)
            torch.testing.assert_close(row_next["actor"][env], nxt)
    # By hand: env 1's window at step 0 stops at its termination: r0 + 0.9 r1, terminated.
    first = rows[n - 1]
    assert float(first[2][1]) == pytest.approx(0.1 + 0.9 * 0.4) and bool(first[3][1])
    # env 2's window at step 1 stops at its time-out at step 2: not terminated, s' = step 2's.
    second = rows[n]
    assert float(second[2][2]) == pytest.approx(0.5 + 0.9 * 0.8) and not bool(second[3][2])
    torch.testing.assert_close(second[4]["actor"][2], next_obs[2, 2])


def test_weight_projection_equals_the_per_layer_projections():
    """The batched projection a training step calls does what each layer's own method does."""
    import copy

    from unilab_rl.algorithms.flashsac.networks import WeightProjection

    torch.manual_seed(0)
    for net in (CategoricalCritic(20, 5, 32, 2, num_bins=11), FlashActor(20, -torch.ones(5), torch.ones(5), 16, 2)):
        with torch.no_grad():
            for p in net.parameters():
                p.add_(0.3 * torch.randn_like(p))  # off their spheres, as after an optimizer step
        per_layer = copy.deepcopy(net)
        for m in per_layer.modules():
            if isinstance(m, (UnitLinear, UnitBatchNorm, UnitRMSNorm)):
                m.normalize_parameters()
        WeightProjection(net)()
        for (name, p), q in zip(net.named_parameters(), per_layer.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6, msg=name)
