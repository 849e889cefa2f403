#!/usr/bin/env bash
# Download into ./.gl/ the x86-64 Debian packages of the OpenGL/EGL/Vulkan loaders (libglvnd,
# libvulkan) that the GPU machine lacks, as the device notes' rendering paragraph describes. The
# NVIDIA driver there provides the vendor libraries; these are the dispatch libraries MuJoCo's EGL
# context (PyOpenGL: libEGL.so.1, libOpenGL.so.0) loads.
#
# Usage (repository root, on a Debian/Ubuntu machine with apt, as root):  scripts/fetch-gl-loaders.sh
# Then, on the GPU machine, carry `.gl` and begin the command with
#   for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
# (benchmarks/device_play.sh does this itself). `.gl/` is git-ignored (.gitignore).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
if ! git check-ignore -q .gl/x.deb; then  # .gitignore has /.gl/; keep it out of git regardless
  echo '/.gl/' >> "$(git rev-parse --git-common-dir)/info/exclude"
fi
lists=${TMPDIR:-/tmp}/unilab-apt-amd64
mkdir -p .gl "$lists/partial"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
apt-get "${o[@]}" -qq update
rm -f .gl/*.deb
(cd .gl && apt-get "${o[@]}" -qq download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
for f in .gl/*.deb; do  # each must hold its shared library, or the GPU machine has nothing to load
  files=$(dpkg-deb -c "$f")
  grep -q '\.so' <<<"$files" || { echo "error: $f holds no shared library" >&2; exit 1; }
done
ls -l .gl; du -sh .gl
