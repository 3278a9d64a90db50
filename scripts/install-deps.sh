#!/usr/bin/env bash
# Installs, only when missing, every Debian package that attnlab's build, tests and tools need.
# Idempotent: a second run installs nothing. Uses sudo when not root. Fails loudly.
#   --notebooks  also Debian's Jupyter Notebook, to open notebooks/ in a browser (make test runs them headless
#                without it, so make and CI never ask for it: it brings some 40 packages)
set -euo pipefail
notebooks=0
for arg in "$@"; do
  case "$arg" in
    --notebooks) notebooks=1 ;;
    *) echo "install-deps: unknown argument '$arg' (--notebooks adds Jupyter Notebook)" >&2; exit 2 ;;
  esac
done

# One line per package, grouped by what needs it.
packages=(
  # build
  cmake ninja-build g++ make pkg-config
  # core libraries (DESIGN.md: Debian bookworm packages, nothing vendored)
  libeigen3-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  # the GUI: Dear ImGui 1.86 (+ its GLFW/OpenGL 3 backend sources), GLFW, OpenGL headers, stb_image_write
  libimgui-dev libglfw3-dev libgl-dev libstb-dev
  # tests: Catch2; Xvfb + Mesa's software OpenGL for the GUI's screenshot test; headless Chromium
  # renders the report; DejaVu fonts for both (stb_image reads the screenshots back)
  catch2 xvfb xauth libgl1-mesa-dri chromium fonts-dejavu-core
  # the hostile-input corpus runner (tests/corpus/run_corpus.py)
  python3
  # `import attnlab` (app/python): pybind11 headers, and NumPy for Debian's /usr/bin/python3, which the
  # module is built for and its tests (tests/python) run under
  pybind11-dev python3-numpy
  # the notebooks (notebooks/, executed by `make test`): a headless kernel and runner, their plots, and
  # tqdm for attnlab.run's progress bar
  python3-nbclient python3-nbformat python3-ipykernel python3-matplotlib python3-tqdm
  # `make fuzz` / `make fuzz-regress`: clang with libFuzzer and the sanitizer runtimes, llvm-symbolizer for
  # readable stacks. Clang 16, not bookworm's default 14: 14 cannot capture a structured binding in a
  # lambda (C++20), which the sources do. `make test-sanitize` builds with the same clang (Makefile says why).
  clang-16 libclang-rt-16-dev llvm-16
  # scripts/gui-bundle.sh (the GUI carried to a GPU server): xz for the archive, ldd for the library closure
  xz-utils libc-bin
)
# `jupyter notebook` (notebooks/README.md): the notebook server and the `jupyter` command (jupyter-core)
if [ "$notebooks" = 1 ]; then
  packages+=(jupyter-notebook)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq || { echo "install-deps: apt-get update failed" >&2; exit 1; }
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || { echo "install-deps: apt-get install failed for: ${missing[*]}" >&2; exit 1; }
echo "install-deps: done" >&2
