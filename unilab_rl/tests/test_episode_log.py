"""EpisodeLogWindow: Episode* log entries averaged over the last finished episodes."""

import pytest

from unilab_rl.runner import EpisodeLogWindow


def naive_window_mean(history: list[tuple[float, int]], window: int) -> float:
    """Weighted mean of the newest steps, dropping the oldest step while the newer ones alone hold
    ``window`` episodes (the rule EpisodeLogWindow documents)."""
    kept: list[tuple[float, int]] = []
    for value, n in reversed(history):
        if sum(m for _, m in kept) >= window:
            break
        kept.append((value, n))
    return sum(v * n for v, n in kept) / sum(n for _, n in kept)


def test_weighted_by_episode_count():
    w = EpisodeLogWindow(window=100)
    w.add({"Episode_Reward/track": 2.0}, finished=3)
    out = w.add({"Episode_Reward/track": 0.0}, finished=1)
    assert out["Episode_Reward/track"] == pytest.approx(1.5)  # (2*3 + 0*1) / 4, not the last value


def test_matches_naive_window_and_drops_old_steps():
    w = EpisodeLogWindow(window=10)
    history: list[tuple[float, int]] = []
    for i in range(40):
        value, n = float(i % 7), 1 + i % 4
        history.append((value, n))
        out = w.add({"Episode_Termination/fell_over": value}, finished=n)
        assert out["Episode_Termination/fell_over"] == pytest.approx(naive_window_mean(history, 10))
    assert w.means()["Episode_Termination/fell_over"] == pytest.approx(naive_window_mean(history, 10))


def test_other_keys_and_steps_without_episodes_pass_through():
    w = EpisodeLogWindow(window=5)
    out = w.add({"Curriculum/penalty_scale": 0.3, "Episode/length_s": 4.0}, finished=0)
    assert out == {"Curriculum/penalty_scale": 0.3, "Episode/length_s": 4.0}
    assert w.means() == {}
