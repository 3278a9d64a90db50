#!/usr/bin/env bash
# On the lent GPU machine: unpacks scripts/gui-bundle.sh's archive (carried as build-gui-bundle/) and runs
# attnlab-gui under its own Xvfb with the kernel backend, one screenshot per config, into $OUT:
#   scripts/gui-on-gpu.sh [CONFIG[@STEP] …]   (default: the GPU bench config, a lesson, the turbo decode bench)
# CONFIG@K opens a lesson at step K. WITH_KERNEL=1 adds the kernel backend to each config (a copy in /tmp).
# Every carried program starts through the carried loader with only the carried libraries (plus the
# machine's own for the CUDA driver, which must be the machine's).
set -u
out=${OUT:-/tmp/attnlab-out}
mkdir -p "$out"
root=/tmp/attnlab-gui-bundle
rm -rf "$root" && mkdir -p "$root"
tar -C "$root" -xJf build-gui-bundle/attnlab-gui-bundle.tar.xz || { echo "gui-on-gpu: no bundle" >&2; exit 2; }
driver_dirs=$(ldconfig -p 2>/dev/null | awk '/libcuda.so.1 /{print $NF}' | xargs -r -n1 dirname | sort -u | tr '\n' ':')
libs="$root/lib:${driver_dirs}${LD_LIBRARY_PATH:-}"
run() { "$root/lib/ld-linux-x86-64.so.2" --library-path "$libs" "$@"; }
export LIBGL_DRIVERS_PATH="$root/dri" __GLX_VENDOR_LIBRARY_NAME=mesa XKB_CONFIG_ROOT="$root/share/X11/xkb"
# Xvfb runs xkbcomp from its compiled-in /usr/bin; the font is looked for where Debian puts it.
if [ ! -e /usr/bin/xkbcomp ]; then
  printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$root/lib/ld-linux-x86-64.so.2" "$libs" "$root/bin/xkbcomp" >/usr/bin/xkbcomp
  chmod +x /usr/bin/xkbcomp
fi
mkdir -p /usr/share/fonts/truetype/dejavu && cp --update=none "$root/fonts/DejaVuSans.ttf" /usr/share/fonts/truetype/dejavu/
run "$root/bin/Xvfb" :77 -screen 0 1920x1200x24 -nolisten tcp -xkbdir "$root/share/X11/xkb" >"$out/xvfb.log" 2>&1 &
xvfb=$!
sleep 3
export DISPLAY=:77
status=0
for cfg in "${@:-configs/bench-gpu.json configs/lessons/online-softmax.json configs/bench-turbo-decode.json}"; do
  for c in $cfg; do
    step=()
    if [[ "$c" == *@* ]]; then step=(--step "${c##*@}"); c=${c%@*}; fi
    name=$(basename "$c" .json)${step:+-step${step[1]}}
    if [ -n "${WITH_KERNEL:-}" ]; then
      python3 -c "import json,sys; c=json.load(open(sys.argv[1])); b=c.setdefault('backends',['reference']); b.count('kernel') or b.append('kernel'); json.dump(c,open(sys.argv[2],'w'))" "$c" "/tmp/$name.json"
      c=/tmp/$name.json
    fi
    echo "== $c ${step[*]}"
    timeout 300 "$root/lib/ld-linux-x86-64.so.2" --library-path "$libs" "$root/bin/attnlab-gui" --config "$c" "${step[@]}" \
      --size 1920x1200 --screenshot "$out/gui-$name.png" >"$out/gui-$name.log" 2>&1
    rc=$?
    echo "exit $rc"; tail -3 "$out/gui-$name.log"
    [ $rc -eq 0 ] || status=1
  done
done
kill $xvfb 2>/dev/null
tail -5 "$out/xvfb.log"
exit $status
