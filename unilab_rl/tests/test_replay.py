"""ReplayBuffer: ring wrap-around and sampled contents."""

from __future__ import annotations

import pytest
import torch

from unilab_rl.replay import ReplayBuffer


def _transitions(ids: torch.Tensor) -> dict:
    """Transitions whose every field encodes the transition id, so rows can be checked for mixing."""
    f = ids.float()
    return dict(
        obs={"actor": f[:, None], "critic": torch.stack([f, -f], dim=1)},
        actions=(f + 0.5)[:, None],
        rewards=f * 10,
        terminated=(ids % 3 == 0),
        next_obs={"actor": (f + 1000)[:, None], "critic": torch.stack([f + 1000, -f], dim=1)},
    )


def _buffer(capacity: int) -> ReplayBuffer:
    return ReplayBuffer(capacity, {"actor": 1, "critic": 2}, 1, "cpu")


def test_wrap_around_overwrites_oldest() -> None:
    buf = _buffer(10)
    for start in (0, 4, 8):  # three batches of 4 transitions: ids 0..11
        buf.add(**_transitions(torch.arange(start, start + 4)))
    assert len(buf) == 10 and buf.ptr == 2
    # Rows 0-1 hold ids 10, 11 (wrapped); rows 2-9 hold ids 2..9; ids 0, 1 are gone.
    expected = torch.tensor([10, 11, 2, 3, 4, 5, 6, 7, 8, 9]).float()
    torch.testing.assert_close(buf.obs["actor"][:, 0], expected)
    torch.testing.assert_close(buf.rewards, expected * 10)
    torch.testing.assert_close(buf.next_obs["critic"][:, 0], expected + 1000)
    assert torch.equal(buf.terminated, expected.long() % 3 == 0)


def test_batch_larger_than_capacity_keeps_newest() -> None:
    buf = _buffer(4)
    buf.add(**_transitions(torch.arange(6)))
    assert sorted(buf.obs["actor"][:, 0].tolist()) == [2.0, 3.0, 4.0, 5.0]
    assert len(buf) == 4


def test_samples_only_stored_rows_with_consistent_fields() -> None:
    buf = _buffer(100)
    buf.add(**_transitions(torch.arange(7)))
    batch = buf.sample(500, generator=torch.Generator().manual_seed(0))
    ids = batch.obs["actor"][:, 0]
    assert set(ids.long().tolist()) == set(range(7))  # all 7 stored rows, nothing from the empty part
    torch.testing.assert_close(batch.obs["critic"][:, 1], -ids)
    torch.testing.assert_close(batch.actions[:, 0], ids + 0.5)
    torch.testing.assert_close(batch.rewards, ids * 10)
    torch.testing.assert_close(batch.next_obs["actor"][:, 0], ids + 1000)
    assert torch.equal(batch.terminated, ids.long() % 3 == 0)
    assert batch.terminated.dtype == torch.bool


def test_sampling_is_uniform_and_reproducible() -> None:
    buf = _buffer(8)
    buf.add(**_transitions(torch.arange(8)))
    a = buf.sample(8000, generator=torch.Generator().manual_seed(1)).rewards
    b = buf.sample(8000, generator=torch.Generator().manual_seed(1)).rewards
    assert torch.equal(a, b)
    counts = torch.bincount((a / 10).long(), minlength=8).float()
    assert (counts / 8000 - 1 / 8).abs().max() < 0.02


def test_capturable_sampling_follows_the_device_size_and_is_uniform() -> None:
    """sample_capturable reads the size from size_tensor, so one call site (a CUDA graph) sees the
    buffer fill; rows stay consistent and uniform over the stored part."""
    buf = _buffer(16)
    buf.add(**_transitions(torch.arange(4)))
    assert buf.size_tensor.item() == 4
    torch.manual_seed(0)
    ids = buf.sample_capturable(4000).obs["actor"][:, 0]
    assert set(ids.long().tolist()) == set(range(4))
    buf.add(**_transitions(torch.arange(4, 20)))  # wraps: 16 rows, ids 4..19
    assert buf.size_tensor.item() == 16
    batch = buf.sample_capturable(16000)
    ids = batch.obs["actor"][:, 0]
    assert set(ids.long().tolist()) == set(range(4, 20))
    torch.testing.assert_close(batch.rewards, ids * 10)
    torch.testing.assert_close(batch.next_obs["critic"][:, 0], ids + 1000)
    counts = torch.bincount(ids.long() - 4, minlength=16).float()
    assert (counts / 16000 - 1 / 16).abs().max() < 0.015
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        buf.sample_capturable(0)


def test_errors() -> None:
    buf = _buffer(4)
    with pytest.raises(ValueError, match="empty"):
        buf.sample(1)
    bad = _transitions(torch.arange(2))
    del bad["next_obs"]["critic"]
    with pytest.raises(KeyError, match="critic"):
        buf.add(**bad)
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(0, {"actor": 1}, 1, "cpu")
