"""LAFAN1-style CSV import: quaternion order, resampling to 50 fps, and body poses by forward
kinematics that agree with the 50 fps clip they were derived from."""

from __future__ import annotations

import numpy as np
import pytest

from unilab.motion import (
    MotionFormatError,
    fk_motion,
    import_lafan_csv,
    load_motion,
    read_lafan_csv,
    resample_qpos,
    write_lafan_csv,
)
from unilab.robots import g1
from unilab.tasks.g1_motion_tracking import DEFAULT_MOTION


def default_qpos() -> np.ndarray:
    """(T, 36) qpos of the shipped clip at 50 fps (root = the pelvis body, which carries the free joint)."""
    clip = load_motion(DEFAULT_MOTION)
    p = clip.body_names.index("pelvis")
    return np.concatenate(
        (clip.body_pos_w[:, p], clip.body_quat_w[:, p], clip.select(g1.G1_JOINT_NAMES, ()).joint_pos), axis=1
    ).astype(np.float64)


def test_csv_round_trip_matches_fk_at_50_fps(tmp_path):
    qpos50 = default_qpos()
    reference = fk_motion(qpos50, 50.0)
    csv = tmp_path / "clip.csv"
    write_lafan_csv(csv, resample_qpos(qpos50, 50.0, 30.0))
    raw = np.loadtxt(csv, delimiter=",")
    assert raw.shape == (181, 36)  # 6 s at 30 fps
    np.testing.assert_allclose(raw[0, 3:7], [0.0, 0.0, 0.0, 1.0], atol=1e-6)  # xyzw on disk

    clip = import_lafan_csv(csv)  # 30 fps in, 50 fps out
    assert clip.fps == 50.0 and clip.num_frames == reference.num_frames == 301
    assert clip.body_names == reference.body_names
    pos_err = np.abs(clip.body_pos_w - reference.body_pos_w).max()
    assert pos_err < 2e-3, pos_err  # m: linear interpolation of a smooth 30 fps trajectory
    quat_dot = np.abs(np.sum(clip.body_quat_w * reference.body_quat_w, axis=-1))
    assert quat_dot.min() > 1 - 1e-4
    assert np.abs(clip.body_lin_vel_w - reference.body_lin_vel_w).max() < 0.05  # m/s
    np.testing.assert_allclose(clip.joint_pos, reference.joint_pos, atol=5e-3)


def test_fk_velocities_are_consistent_with_positions():
    clip = fk_motion(default_qpos(), 50.0)
    # central difference of the body positions ~ the FK linear velocity
    fd = (clip.body_pos_w[2:] - clip.body_pos_w[:-2]) * 25.0
    assert np.abs(fd - clip.body_lin_vel_w[1:-1]).max() < 0.02


def test_resample_linear_and_slerp_exact():
    t30 = np.arange(31) / 30.0  # 1 s
    qpos = np.zeros((31, 36))
    qpos[:, 0] = 2.0 * t30
    yaw = 0.8 * t30
    qpos[:, 3], qpos[:, 6] = np.cos(yaw / 2), np.sin(yaw / 2)
    qpos[:, 7:] = 0.3 * t30[:, None]
    out = resample_qpos(qpos, 30.0, 50.0)
    t50 = np.arange(51) / 50.0
    assert out.shape == (51, 36)
    np.testing.assert_allclose(out[:, 0], 2.0 * t50, atol=1e-12)
    np.testing.assert_allclose(out[:, 7:], 0.3 * np.tile(t50[:, None], (1, 29)), atol=1e-12)
    np.testing.assert_allclose(out[:, 3], np.cos(0.4 * t50), atol=1e-12)
    np.testing.assert_allclose(out[:, 6], np.sin(0.4 * t50), atol=1e-12)
    # down-sampling keeps only frames inside the clip
    assert resample_qpos(qpos, 30.0, 10.0).shape[0] == 11


def test_bad_csv_names_file_and_expectation(tmp_path):
    bad = tmp_path / "short.csv"
    np.savetxt(bad, np.zeros((5, 35)), delimiter=",")
    with pytest.raises(MotionFormatError, match=r"short.csv.*key 'columns'.*expected 36 columns"):
        read_lafan_csv(bad)
    nan = tmp_path / "nan.csv"
    rows = np.zeros((5, 36))
    rows[:, 6] = 1.0
    rows[2, 10] = np.nan
    np.savetxt(nan, rows, delimiter=",")
    with pytest.raises(MotionFormatError, match=r"nan.csv.*expected finite numbers.*row 2, column 10"):
        read_lafan_csv(nan)



def _good_rows(n: int = 3) -> str:
    """``n`` valid CSV lines (identity root quaternion xyzw, joints at 0)."""
    row = np.zeros(36)
    row[2], row[6] = 0.75, 1.0
    return "".join(",".join(f"{v:g}" for v in row) + "\n" for _ in range(n))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", r"empty.csv': key 'file': is empty; expected one row of 36 comma-separated numbers"),
        ("\n# only a comment\n", r"key 'file': has only blank and # comment lines"),
        ("root_x,root_y,root_z\n" + _good_rows(), r"key 'header': the first row \(line 1\) is not numbers "
         r"\(column 0 is 'root_x'\); a header row is not expected"),
        (_good_rows() + "1,2,3\n" + _good_rows(), r"key 'columns': line 4 has 3 columns, line 1 \(the first row\) "
         r"has 36; expected 36 on every line"),
        (_good_rows() + _good_rows(1).replace("0.75", "0.7x"), r"key 'values': expected numbers, found '0.7x' at row 3, "
         r"column 2 \(line 4\)"),
    ],
    ids=["empty", "comments_only", "header", "ragged", "word"],
)
def test_malformed_csv_is_one_line_without_numpy_warnings(tmp_path, text, match):
    import warnings

    path = tmp_path / ("empty.csv" if not text else "clip.csv")
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's loadtxt warned "input contained no data" on an empty file
        with pytest.raises(MotionFormatError, match=match) as info:
            read_lafan_csv(path)
    assert "\n" not in str(info.value) and "usecols" not in str(info.value)


def test_blank_lines_and_comments_are_skipped_and_lines_are_named(tmp_path):
    path = tmp_path / "clip.csv"
    rows = _good_rows().splitlines()
    path.write_text("# retargeted\n" + rows[0] + "\n\n" + rows[1] + "\n" + rows[2].replace("0.75", "nan") + "\n")
    with pytest.raises(MotionFormatError, match=r"found nan at row 2, column 2 \(line 5\)"):
        read_lafan_csv(path)
    path.write_text("# retargeted\n" + "\n".join(rows) + "\n")
    assert read_lafan_csv(path).shape == (3, 36)


def _write_csv(path, qpos_wxyz: np.ndarray, order: str = "xyzw", scale: float = 1.0) -> None:
    """The (T, 36) qpos as a CSV with its root quaternion written in ``order``, times ``scale``."""
    rows = qpos_wxyz.copy()
    rows[:, 3:7] = scale * (qpos_wxyz[:, [4, 5, 6, 3]] if order == "xyzw" else qpos_wxyz[:, 3:7])
    np.savetxt(path, rows, delimiter=",", fmt="%.10f")


def test_a_wxyz_quaternion_in_a_csv_is_refused_and_read_with_quat_order(tmp_path):
    from unilab.motion.importers import import_motion

    qpos = resample_qpos(default_qpos(), 50.0, 30.0)
    _write_csv(tmp_path / "wxyz.csv", qpos, order="wxyz")  # the mjlab/IsaacLab habit
    with pytest.raises(MotionFormatError) as info:
        import_motion(tmp_path / "wxyz.csv")
    msg = str(info.value)
    assert "key 'root quaternion': the root quaternion looks like wxyz, not xyzw" in msg, msg
    assert "upside down" in msg and "the file format expects xyzw" in msg and "--quat-order wxyz" in msg, msg
    fixed = import_motion(tmp_path / "wxyz.csv", quat_order="wxyz").clip
    _write_csv(tmp_path / "xyzw.csv", qpos)
    expected = import_motion(tmp_path / "xyzw.csv").clip
    np.testing.assert_allclose(fixed.body_pos_w, expected.body_pos_w, atol=1e-6)
    pelvis = fixed.body_names.index("pelvis")
    assert fixed.body_pos_w[:, pelvis, 2].min() > 0.5  # upright: the pelvis above the feet
    with pytest.raises(MotionFormatError, match=r"--quat-order': expected xyzw or wxyz, got 'zyxw'"):
        import_motion(tmp_path / "xyzw.csv", quat_order="zyxw")


def test_a_quaternion_far_from_unit_norm_is_refused_naming_the_row(tmp_path):
    from unilab.motion.importers import import_motion

    qpos = resample_qpos(default_qpos(), 50.0, 30.0)
    _write_csv(tmp_path / "norm2.csv", qpos, scale=2.0)
    with pytest.raises(MotionFormatError, match=r"norm2.csv': key 'root quaternion': expected unit quaternions "
                       r"\(\|norm - 1\| <= 0.01\), row 0 \(line 1\) has norm 2 \(xyzw 0, 0, 0, 2\)"):
        import_motion(tmp_path / "norm2.csv")
    _write_csv(tmp_path / "rounded.csv", qpos, scale=1.005)  # within the tolerance: normalised
    clip = import_motion(tmp_path / "rounded.csv").clip
    np.testing.assert_allclose(np.linalg.norm(clip.body_quat_w, axis=-1), 1.0, atol=1e-6)
    clip = load_motion(DEFAULT_MOTION)
    p = clip.body_names.index("pelvis")
    root = np.concatenate((clip.body_pos_w[:, p], 0.5 * clip.body_quat_w[:, p]), axis=1)
    np.savez(tmp_path / "half.npz", fps=np.array([50.0]), joint_names=np.array(clip.joint_names),
             joint_pos=np.concatenate((root, clip.joint_pos), axis=1))  # fmt: skip
    with pytest.raises(MotionFormatError, match=r"half.npz': key 'root quaternion'.*frame 0 has norm 0.5 \(wxyz"):
        import_motion(tmp_path / "half.npz")

# ---------------------------------------------------------------------------- every layout
def _write_layout(kind: str, path, clip) -> dict:
    """Write the shipped clip in one of the layouts users bring; returns import_motion kwargs."""
    from unilab.motion.importers import breadth_first_joint_order

    rng = np.random.default_rng(0)
    p = clip.body_names.index("pelvis")
    root = np.concatenate((clip.body_pos_w[:, p], clip.body_quat_w[:, p]), axis=1)
    perm = rng.permutation(len(clip.joint_names))  # any joint order, told by name
    shuffled = np.array(clip.joint_names)[perm]
    bodies = [p] + [i for i in rng.permutation(len(clip.body_names)) if i != p]
    body_arrays = {k: getattr(clip, k)[:, bodies] for k in ("body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")}
    fps = np.array([clip.fps], dtype=np.float32)
    if kind == "lafan_csv":  # 17 significant digits give the float64 value back exactly
        rows = np.concatenate((root[:, :3], root[:, [4, 5, 6, 3]], clip.joint_pos), axis=1)
        np.savetxt(path, rows.astype(np.float64), delimiter=",", fmt="%.17g")
        return {"fps": 50.0}
    if kind == "qpos_npz":  # holosoma: world body first, full qvel in joint_vel
        world = {k: np.concatenate((np.zeros_like(v[:, :1]), v), axis=1) for k, v in body_arrays.items()}
        np.savez(path, fps=fps, joint_names=shuffled, joint_pos=np.concatenate((root, clip.joint_pos[:, perm]), axis=1),
                 joint_vel=np.zeros((clip.num_frames, 35)),
                 body_names=np.array(["world"] + [clip.body_names[i] for i in bodies]), **world)  # fmt: skip
        return {}
    if kind == "qpos_npz_unnamed":
        np.savez(path, fps=fps, joint_pos=np.concatenate((root, clip.joint_pos), axis=1))
        return {"joint_order": "unitree"}
    if kind == "beyondmimic_npz":  # this project's own format, joints and bodies shuffled
        np.savez(path, fps=fps, joint_names=shuffled, body_names=np.array([clip.body_names[i] for i in bodies]),
                 joint_pos=clip.joint_pos[:, perm], joint_vel=clip.joint_vel[:, perm], **body_arrays)  # fmt: skip
        return {}
    if kind == "beyondmimic_npz_unnamed":  # as BeyondMimic writes it from IsaacLab: no names
        order = [clip.joint_names.index(n) for n in breadth_first_joint_order()]
        np.savez(path, fps=fps, joint_pos=clip.joint_pos[:, order], joint_vel=clip.joint_vel[:, order], **body_arrays)
        return {"joint_order": "isaaclab"}
    raise AssertionError(kind)


LAYOUT_CASES = ("lafan_csv", "qpos_npz", "qpos_npz_unnamed", "beyondmimic_npz", "beyondmimic_npz_unnamed")


@pytest.mark.parametrize("kind", LAYOUT_CASES)
def test_every_layout_round_trips_to_identical_joint_data(tmp_path, kind):
    from unilab.motion.importers import import_motion

    clip = load_motion(DEFAULT_MOTION)
    path = tmp_path / ("clip.csv" if kind == "lafan_csv" else "clip.npz")
    kwargs = _write_layout(kind, path, clip)
    result = import_motion(path, **kwargs)
    assert result.layout == kind.removesuffix("_unnamed")
    out = result.clip
    assert out.joint_names == clip.joint_names and out.fps == 50.0
    np.testing.assert_array_equal(out.joint_pos, clip.joint_pos)
    # bodies come from forward kinematics on our G1, whatever the file stored
    reference = fk_motion(default_qpos(), 50.0)
    np.testing.assert_array_equal(out.joint_vel, reference.joint_vel)
    np.testing.assert_allclose(out.body_pos_w, reference.body_pos_w, atol=1e-6)
    if kind in ("qpos_npz", "beyondmimic_npz"):  # named bodies are compared with ours
        assert result.body_deviation_m is not None and result.body_deviation_m < 1e-5


@pytest.mark.parametrize("kind", ("qpos_npz_unnamed", "beyondmimic_npz_unnamed"))
def test_unknown_joint_order_is_refused_naming_the_option(tmp_path, kind):
    from unilab.motion.importers import import_motion

    path = tmp_path / "clip.npz"
    _write_layout(kind, path, load_motion(DEFAULT_MOTION))
    with pytest.raises(MotionFormatError, match=r"clip.npz.*joint order cannot be known; pass --joint-order"):
        import_motion(path)


def test_joint_order_errors_name_the_joint_given_twice_and_the_unknown_names(tmp_path):
    from unilab.motion.importers import import_motion

    _write_csv(tmp_path / "clip.csv", resample_qpos(default_qpos(), 50.0, 30.0))
    names = list(g1.G1_JOINT_NAMES)

    def refused(order: list[str]) -> str:
        with pytest.raises(MotionFormatError) as info:
            import_motion(tmp_path / "clip.csv", joint_order=",".join(order))
        return str(info.value)

    twice = [n if n != "left_knee_joint" else "left_hip_roll_joint" for n in names]
    assert "--joint-order names 'left_hip_roll_joint' more than once" in refused(twice)
    misspelt = [n if n != "left_knee_joint" else "left_knee" for n in names]
    msg = refused(misspelt)
    assert ("--joint-order lacks the G1 joints ['left_knee_joint'], and names joints the G1 does not have: "
            "'left_knee' (close to 'left_knee_joint')") in msg, msg
    other = [n if n != "left_knee_joint" else "tail_joint" for n in names]
    assert "does not have: 'tail_joint';" in refused(other)
    extra = tmp_path / "extra.npz"  # a joint the G1 lacks, beside all of its own: ignored and listed
    clip = load_motion(DEFAULT_MOTION)
    np.savez(extra, fps=np.array([50.0]), joint_names=np.array([*clip.joint_names, "tail_joint"]),
             joint_pos=np.concatenate((default_qpos()[:, :7], clip.joint_pos, clip.joint_pos[:, :1]), axis=1))
    assert import_motion(extra).notes == ["ignored 1 joints the G1 does not have: ['tail_joint']"]

def test_stored_bodies_that_differ_from_ours_are_reported(tmp_path):
    from unilab.motion.importers import import_motion

    clip = load_motion(DEFAULT_MOTION)
    arrays = {k: getattr(clip, k) for k in ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w",
                                            "body_lin_vel_w", "body_ang_vel_w")}  # fmt: skip
    torso = clip.body_names.index("torso_link")
    arrays["body_pos_w"] = arrays["body_pos_w"].copy()
    arrays["body_pos_w"][:, torso, 0] += 0.012  # another engine's torso frame, 12 mm away
    np.savez(tmp_path / "other.npz", fps=np.array([50.0]), joint_names=np.array(clip.joint_names),
             body_names=np.array(clip.body_names), **arrays)  # fmt: skip
    result = import_motion(tmp_path / "other.npz")
    assert result.body_deviation_body == "torso_link"
    assert abs(result.body_deviation_m - 0.012) < 1e-5
    np.testing.assert_allclose(result.clip.body_pos_w, clip.body_pos_w, atol=1e-6)  # recomputed, not copied


def test_import_cli_detects_layouts_and_gives_one_error_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    unilab = str(Path(sys.executable).parent / "unilab")
    clip = load_motion(DEFAULT_MOTION)
    _write_layout("beyondmimic_npz_unnamed", tmp_path / "bm.npz", clip)
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([unilab, "motion", "import", *args], capture_output=True, text=True, timeout=120)

    refused = run(str(tmp_path / "bm.npz"), "--out", str(tmp_path / "o.npz"))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: motion file") and "--joint-order" in line
    ok = run(str(tmp_path / "bm.npz"), "--out", str(tmp_path / "o.npz"), "--joint-order", "isaaclab")
    assert ok.returncode == 0, ok.stderr
    assert "beyondmimic_npz, 301 frames at 50 fps, joint order from --joint-order" in ok.stdout
    np.testing.assert_array_equal(load_motion(tmp_path / "o.npz").joint_pos, clip.joint_pos)
    (tmp_path / "junk.npz").write_bytes(b"\x00\xff" * 64)  # neither text nor an npz archive
    junk = run(str(tmp_path / "junk.npz"), "--out", str(tmp_path / "j.npz"))
    assert junk.returncode == 2
    (line,) = junk.stderr.strip().splitlines()
    assert line.startswith("error: motion file") and "junk.npz" in line and "expected a LAFAN1-style CSV" in line


def test_docs_list_the_unitree_order_as_the_code_has_it(tmp_path):
    from pathlib import Path

    from unilab.motion.importers import resolve_joint_order

    text = (Path(__file__).resolve().parents[2] / "docs" / "motion.md").read_text()
    block = text.split("**Unitree order**", 1)[1].split("```\n", 2)[1]
    (tmp_path / "order.txt").write_text(block)
    assert resolve_joint_order(f"@{tmp_path / 'order.txt'}") == g1.G1_JOINT_NAMES
    assert resolve_joint_order(block.replace("\n", "")) == g1.G1_JOINT_NAMES


def test_the_other_order_is_only_suggested_where_it_stands_the_robot_up():
    """The swap check reads the file in the other order as that order stores it: a root upside down
    either way is not called swapped, one upright the other way is."""
    from unilab.motion.kinematics import root_quat_wxyz

    def read(q, order):
        return root_quat_wxyz(np.tile(q, (4, 1)), order, path="clip.csv", key="root quaternion",
                              where=lambda i: f"row {i}", layout_order="xyzw")

    upside_down_both_ways = np.array([-0.446, -0.802, -0.395, 0.026])  # xyzw: up z -0.69; as wxyz: -0.60
    assert read(upside_down_both_ways, "xyzw").shape == (4, 4)
    with pytest.raises(MotionFormatError, match="looks like wxyz, not xyzw"):
        read(np.array([1.0, 0.0, 0.0, 0.0]), "xyzw")  # identity written wxyz
