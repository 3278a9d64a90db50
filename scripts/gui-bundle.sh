#!/usr/bin/env bash
# Packs attnlab-gui with everything it needs to run under Xvfb on a machine that has none of it — the lent
# GPU machine has no X server, no Mesa, no GLFW (issue 16: the GUI seen driving a kernel): the built
# binary, Xvfb and xkbcomp, Mesa's software OpenGL (swrast_dri.so and libLLVM), glvnd, every shared
# library they load (their ldd closure, the C library and its loader included, so that the machine's own
# older or newer libraries never mix in), the XKB data and the DejaVu font. Everything comes from this
# machine's Debian packages (scripts/install-deps.sh). scripts/gui-on-gpu.sh unpacks and runs it there.
#   scripts/gui-bundle.sh [BUILD_DIR]   → build-gui-bundle/attnlab-gui-bundle.tar.xz
set -euo pipefail
build=${1:-build}
gui="$build/bin/attnlab-gui"
[ -x "$gui" ] || { echo "gui-bundle: $gui not built (make build)" >&2; exit 2; }
multiarch=/usr/lib/x86_64-linux-gnu
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/dri" "$stage/share/X11" "$stage/fonts"
cp "$gui" /usr/bin/Xvfb /usr/bin/xkbcomp "$stage/bin/"
cp "$multiarch/dri/swrast_dri.so" "$stage/dri/"
# Loaded with dlopen (so ldd of the binaries does not list them): GLFW opens libGL.so.1, glvnd opens the
# vendor library, Mesa's GLX opens the DRI driver.
dlopened=("$multiarch/libGL.so.1" "$multiarch/libGLX_mesa.so.0" "$multiarch/libGLX.so.0" "$multiarch/libGLdispatch.so.0"
          "$multiarch/libglapi.so.0" "$multiarch/libX11-xcb.so.1" "$multiarch/libXcursor.so.1" "$multiarch/libXrandr.so.2"
          "$multiarch/libXinerama.so.1" "$multiarch/libXi.so.6" "$multiarch/libXxf86vm.so.1")
roots=("$stage/bin/attnlab-gui" "$stage/bin/Xvfb" "$stage/bin/xkbcomp" "$stage/dri/swrast_dri.so" "${dlopened[@]}")
for f in "${dlopened[@]}"; do cp -L "$f" "$stage/lib/"; done
# The closure: every library ldd resolves for the roots (ldd follows the dependencies of dependencies).
for r in "${roots[@]}"; do
  ldd "$r" | awk '/=> \//{print $3} /^\s*\/lib64\/ld-linux/{print $1}'
done | sort -u | while read -r lib; do cp -L "$lib" "$stage/lib/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib/"
cp -r /usr/share/X11/xkb "$stage/share/X11/"
cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf "$stage/fonts/"
mkdir -p build-gui-bundle
tar -C "$stage" -cJf build-gui-bundle/attnlab-gui-bundle.tar.xz .
du -h build-gui-bundle/attnlab-gui-bundle.tar.xz
