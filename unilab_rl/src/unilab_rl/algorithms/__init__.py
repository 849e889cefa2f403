"""Off-policy learners. Each algorithm is a subpackage exposing a config dataclass and a learner
constructible as ``Learner(env, cfg, device)``."""
