#!/usr/bin/env bash
# End-to-end checks of the attnlab CLI contract (DESIGN.md): exit 0 with a table and files on success;
# exit 2 with one line on stderr naming the field or file, and nothing written, on bad input; the report
# folder replaced atomically. Usage: cli_test.sh <attnlab binary> <scratch folder>
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: some checks run in other folders
tmp=$2
rm -rf "$tmp" && mkdir -p "$tmp"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

small() {  # a small valid config, with one sed edit applied (empty: none)
  sed -e "${1:-s/^//}" <<JSON
{"title": "cli test", "problem": {"batch": 1, "q_heads": 2, "kv_heads": 1, "q_len": 70, "kv_len": 70,
 "head_dim": 32, "causal": true, "phase": "prefill"},
 "data": {"generator": "normal", "seed": 2}, "variants": [{"id": "naive"}, {"id": "flash2"}],
 "backends": ["reference", "kernel", "model"]}
JSON
}

# 1. run: exit 0, a table with both variants, results.json written.
small "" >"$tmp/ok.json"
out=$("$bin" run --config "$tmp/ok.json" --json "$tmp/run.json" 2>"$tmp/err") || fail "run exited $?: $(cat "$tmp/err")"
echo "$out" | grep -q "^flash2 .*reference" || fail "run table has no flash2 reference row: $out"
echo "$out" | grep -q "^naive .*reference" || fail "run table has no naive row"
grep -q '"schema": "attnlab.results/2"' "$tmp/run.json" || fail "results.json lacks the schema"
grep -q '"reason"' "$tmp/run.json" || fail "results.json does not say why kernel/model did not run"
# What did not run comes first: naive has no kernel anywhere (and here no GPU runs any), said before the table.
not_run=$(echo "$out" | grep -n "^not run: .*kernel" | cut -d: -f1 | head -1)
header=$(echo "$out" | grep -n "^variant " | cut -d: -f1 | head -1)
[ -n "$not_run" ] && [ -n "$header" ] && [ "$not_run" -lt "$header" ] || fail "run does not say what did not run before its table: $out"
echo "$out" | grep -q "^time on CPU: the reference on " || fail "run's table has no legend line naming the CPU: $out"

# 2. report: index.html, results.json, results.csv; the printed path exists.
path=$("$bin" report --config "$tmp/ok.json" --out "$tmp/report") || fail "report exited $?"
[ -f "$path" ] || fail "report printed '$path', which does not exist"
for f in index.html results.json results.csv; do [ -s "$tmp/report/$f" ] || fail "report lacks $f"; done
grep -q "flash2" "$tmp/report/index.html" || fail "index.html does not mention flash2"
grep -qiE "src=\"http|href=\"http|<script" "$tmp/report/index.html" && fail "index.html references the network or scripts"

# 2b. report --results: the same report from the saved folder (or its results.json), nothing re-run.
"$bin" report --results "$tmp/report" --out "$tmp/saved" >/dev/null 2>"$tmp/err" || fail "report --results exited $?: $(cat "$tmp/err")"
for f in index.html results.json results.csv; do
  cmp -s "$tmp/report/$f" "$tmp/saved/$f" || fail "report --results: $f differs from the live run's"
done
"$bin" report --results "$tmp/report/results.json" --out "$tmp/saved" >/dev/null 2>"$tmp/err" || fail "report --results FILE exited $?"
check_results_bad() {  # name, expected substring, arguments…
  local name=$1 want=$2
  shift 2
  "$bin" report "$@" --out "$tmp/never" >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 2 ] || fail "$name: exit code not 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: stderr is not one line: $(cat "$tmp/err")"
  grep -q -- "$want" "$tmp/err" || fail "$name: stderr lacks '$want': $(cat "$tmp/err")"
  [ -e "$tmp/never" ] && fail "$name: wrote $tmp/never"
}
echo '{"schema": "attnlab.results/1"}' >"$tmp/not-results.json"
echo '{"schema": "attnlab.results/9"}' >"$tmp/other-schema.json"
check_results_bad "--results missing" "not found" --results "$tmp/no-such-results.json"
check_results_bad "--results not results" "not attnlab results" --results "$tmp/not-results.json"
check_results_bad "--results other schema" "attnlab.results/1" --results "$tmp/other-schema.json"
check_results_bad "--results and --config" "takes no --config" --results "$tmp/report" --config "$tmp/ok.json"
check_results_bad "neither" "--config or --results" --pdf
check_results_bad "--results with --gpu" "--gpu" --results "$tmp/report" --gpu h200
# Results computed on an H100 (tests/data/h100-fig6-decode), rendered here without a GPU: the environment
# names the GPU, the roofline joins each prediction to its measurement.
h100="$(cd "$(dirname "$0")/../data/h100-fig6-decode" && pwd)"
"$bin" report --results "$h100" --out "$tmp/h100-report" >/dev/null 2>"$tmp/err" || fail "report of the H100 results exited $?: $(cat "$tmp/err")"
grep -q "NVIDIA H100 80GB HBM3" "$tmp/h100-report/index.html" || fail "the H100 report does not name its GPU"
[ "$(grep -o 'class="link"' "$tmp/h100-report/index.html" | wc -l)" -eq 4 ] || fail "the H100 roofline does not join 4 predictions to their measurements"
# Saved in schema /1; the report writes it back as /2, otherwise unchanged (every array of it is small).
sed 's#"attnlab.results/1"#"attnlab.results/2"#' "$h100/results.json" | cmp -s - "$tmp/h100-report/results.json" ||
  fail "the H100 report's results.json differs from the saved one (beyond the schema)"
# run --save: a results folder the report opens; its report equals the one run directly.
"$bin" run --config "$tmp/ok.json" --save "$tmp/saved-run" >"$tmp/out" 2>"$tmp/err" || fail "run --save exited $?: $(cat "$tmp/err")"
grep -q "^saved .*saved-run/results.json" "$tmp/out" || fail "run --save did not say where: $(head -1 "$tmp/out")"
[ -f "$tmp/saved-run/.attnlab-report" ] || fail "run --save: no folder marker"
"$bin" report --results "$tmp/saved-run" --out "$tmp/saved-run-report" >/dev/null 2>"$tmp/err" || fail "report of run --save exited $?"
grep -q "flash2" "$tmp/saved-run-report/index.html" || fail "report of run --save lacks flash2"
# Large arrays (here the logsumexp, 2 heads × 300 rows) travel in .npy sidecars: arrays/ in a folder,
# FILE.arrays/ beside run --json FILE. A missing one is named when the report needs it: exit 2, one line.
small 's/"q_len": 70, "kv_len": 70/"q_len": 300, "kv_len": 300/' >"$tmp/long.json"
"$bin" run --config "$tmp/long.json" --save "$tmp/long-run" --json "$tmp/long-run.json" >/dev/null 2>"$tmp/err" ||
  fail "run of the long config exited $?: $(cat "$tmp/err")"
[ -f "$tmp/long-run/arrays/flash2.reference.lse.npy" ] || fail "run --save wrote no sidecar for flash2's logsumexp"
[ -f "$tmp/long-run.json.arrays/flash2.reference.lse.npy" ] || fail "run --json wrote no sidecar beside the file"
grep -q '"npy": "arrays/flash2.reference.lse.npy"' "$tmp/long-run/results.json" || fail "results.json does not name the sidecar"
rm "$tmp/long-run/arrays/flash2.reference.lse.npy"
check_results_bad "--results with a missing sidecar" "long-run/arrays/flash2.reference.lse.npy: file not found" --results "$tmp/long-run"
mkdir -p "$tmp/foreign" && echo mine >"$tmp/foreign/notes.txt"
"$bin" run --config "$tmp/ok.json" --save "$tmp/foreign" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "run --save into a foreign folder: exit code not 2"
[ "$(ls -A "$tmp/foreign")" = "notes.txt" ] || fail "run --save into a foreign folder changed it"

# 3. bad input: exit 2, one line naming the field, nothing written, previous report intact.
cp "$tmp/report/results.json" "$tmp/previous.json"
check_bad() {  # name, config text, expected substring
  printf '%s' "$2" >"$tmp/bad.json"
  rm -f "$tmp/bad-out.json"
  "$bin" report --config "$tmp/bad.json" --out "$tmp/report" >"$tmp/out" 2>"$tmp/err"
  code=$?
  [ "$code" -eq 2 ] || fail "$1: exit code $code, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$1: stderr is not one line: $(cat "$tmp/err")"
  grep -q -- "$3" "$tmp/err" || fail "$1: stderr does not name '$3': $(cat "$tmp/err")"
  cmp -s "$tmp/report/results.json" "$tmp/previous.json" || fail "$1: the previous report was changed"
  ls -a "$tmp" | grep -q "staging" && fail "$1: a staging folder was left behind"
  "$bin" run --config "$tmp/bad.json" --json "$tmp/bad-out.json" >/dev/null 2>&1
  [ -e "$tmp/bad-out.json" ] && fail "$1: run --json wrote a file on bad input"
}
check_bad "unknown variant" "$(small 's/"id": "naive"/"id": "turbo9"/')" "variants\[0\].id"
check_bad "parameter out of range" "$(small 's/{"id": "flash2"}/{"id": "flash2", "params": {"block_c": 1000}}/')" "variants\[1\].params.block_c"
check_bad "kv_heads" "$(small 's/"kv_heads": 1/"kv_heads": 3/')" "problem.kv_heads"
check_bad "not JSON" '{"problem": ' "bad.json"
check_bad "missing data file" "$(small 's/"generator": "normal", "seed": 2/"file": "missing.safetensors"/')" "missing.safetensors"
"$bin" run --config "$tmp/nonexistent.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "missing config: exit code not 2"
"$bin" run --bogus-flag >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown flag: exit code not 2"

# 4. sweep: a table row per point, the CSV written; a bad value fails before anything runs or is written.
small "" >"$tmp/sweep.json"
out=$("$bin" sweep --config "$tmp/sweep.json" --vary block_c=16,32 --vary data.seed=1,2 --csv "$tmp/sweep.csv" 2>"$tmp/err") \
  || fail "sweep exited $?: $(cat "$tmp/err")"
[ "$(grep -c '^block_c,data.seed,variant' "$tmp/sweep.csv")" -eq 1 ] || fail "sweep CSV lacks its header"
[ "$(grep -c 'flash2,reference' "$tmp/sweep.csv")" -eq 4 ] || fail "sweep CSV does not have 4 flash2 reference rows"
"$bin" sweep --config "$tmp/sweep.json" --vary block_c=16,1000 --csv "$tmp/bad-sweep.csv" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "bad sweep value: exit code not 2"
grep -q "block_c" "$tmp/err" || fail "bad sweep value: stderr does not name block_c: $(cat "$tmp/err")"
[ -e "$tmp/bad-sweep.csv" ] && fail "bad sweep value: a CSV was written"

# 5. run --baseline adds the time ratio; an unknown baseline fails before running.
out=$("$bin" run --config "$tmp/ok.json" --baseline flash2 2>"$tmp/err") || fail "run --baseline exited $?"
echo "$out" | grep -q "time / flash2" || fail "run --baseline has no ratio column"
echo "$out" | grep -E "^flash2 .*reference" | grep -qE "1\.00 *$" || fail "flash2's ratio to itself is not 1.00"
"$bin" run --config "$tmp/ok.json" --baseline flash9 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "unknown baseline: exit code not 2"

# 6. the cost model: model rows, an unknown GPU is refused before anything runs, gpus and capacity list.
out=$("$bin" run --config "$tmp/ok.json" --backend model --gpu a100-sxm4-80gb 2>"$tmp/err") || fail "run --backend model exited $?"
echo "$out" | grep -qE "^flash2 +model \(" || fail "no flash2 model row: $out"
"$bin" run --config "$tmp/ok.json" --backend model --gpu h900 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "unknown GPU: exit code not 2"
grep -q "unknown GPU 'h900'" "$tmp/err" || fail "unknown GPU not named: $(cat "$tmp/err")"
"$bin" gpus | grep -q "^h100-sxm5" || fail "gpus does not list h100-sxm5"
"$bin" capacity --model llama-3-8b --gpu h100-sxm5 --context 4096 | grep -qE "^flash2 .* 111 " || fail "capacity: flash2's max batch is not 111"
"$bin" capacity --model llama-9 >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown model: exit code not 2"

# 7. calibrate writes the factors into the spec (a copy here), and refuses bad measurements untouched.
mkdir -p "$tmp/specs" && cp "$(dirname "$0")/../../sim/specs/"*.json "$tmp/specs/"
meas="$(dirname "$0")/../../sim/measurements/h100-sxm5-sdpa-flash.json"
ATTNLAB_SPECS="$tmp/specs" "$bin" calibrate --measurements "$meas" >"$tmp/out" 2>"$tmp/err" || fail "calibrate exited $?: $(cat "$tmp/err")"
grep -q '"cta_overhead_us"' "$tmp/specs/h100-sxm5.json" || fail "calibrate did not write the factors"
ATTNLAB_SPECS="$tmp/specs" "$bin" gpus | grep -q "h100-sxm5.*(calibrated)" || fail "the calibrated spec does not load"
cp "$tmp/specs/h100-sxm5.json" "$tmp/spec-before.json"
printf '{"schema": "attnlab.measurements/1", "gpu": "h100-sxm5", "measurements": [{"variant": "flash9", "median_ms": 1}]}' >"$tmp/bad-meas.json"
ATTNLAB_SPECS="$tmp/specs" "$bin" calibrate --measurements "$tmp/bad-meas.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "bad measurements: exit code not 2"
grep -q "measurements\[0\]" "$tmp/err" || fail "bad measurements: entry not named: $(cat "$tmp/err")"
cmp -s "$tmp/specs/h100-sxm5.json" "$tmp/spec-before.json" || fail "bad measurements changed the spec"

# 8. presets lists configs/.
"$bin" presets | grep -q "default.json" || fail "presets does not list default.json"
# A title holding a newline stays on its preset's line (echoed as \n).
mkdir -p "$tmp/presets" && printf '{"title": "one\\ntwo"}' >"$tmp/presets/t.json"
out=$(ATTNLAB_CONFIGS="$tmp/presets" "$bin" presets) || fail "presets over a folder of one config exited $?"
[ "$out" = "t.json                               one\ntwo" ] || fail "presets printed a title over two lines: $out"

# 9. outputs: a folder attnlab wrote (the marker) is replaced; a foreign one, the working folder and the
# folders above it are refused with nothing touched; a sweep's default CSV folder appears only on success.
[ -f "$tmp/report/.attnlab-report" ] || fail "the report folder has no .attnlab-report marker"
"$bin" report --config "$tmp/ok.json" --out "$tmp/report" >/dev/null 2>"$tmp/err" || fail "report over its own folder exited $?"
mkdir -p "$tmp/mine" && echo keep >"$tmp/mine/notes.txt"
"$bin" report --config "$tmp/ok.json" --out "$tmp/mine" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "report into a foreign folder: exit code not 2"
grep -q "^attnlab: error: --out: " "$tmp/err" || fail "foreign folder: stderr does not name --out: $(cat "$tmp/err")"
[ "$(ls -A "$tmp/mine")" = "notes.txt" ] || fail "report into a foreign folder changed it: $(ls -A "$tmp/mine")"
mkdir -p "$tmp/cwd/sub" && cp "$tmp/ok.json" "$tmp/cwd/c.json"
for out in . .. ../sub/.. /; do
  (cd "$tmp/cwd/sub" && "$bin" report --config ../c.json --out "$out" >/dev/null 2>"$tmp/err")
  [ $? -eq 2 ] || fail "report --out $out: exit code not 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "report --out $out: stderr is not one line"
done
[ "$(cd "$tmp/cwd" && ls -A)" = "$(printf 'c.json\nsub')" ] || fail "report --out . or .. changed the working folder"
(cd "$tmp/cwd" && ATTNLAB_MAX_MEMORY_GB=0.01 "$bin" sweep --config c.json --vary problem.len=16,4096 >/dev/null 2>&1)
[ -e "$tmp/cwd/out" ] && fail "a failed sweep left its default out/ folder behind"
(cd "$tmp/cwd" && "$bin" sweep --config c.json --vary data.seed=1,2 >/dev/null 2>&1) || fail "sweep to the default CSV exited $?"
[ -s "$tmp/cwd/out/sweep/c.csv" ] || fail "sweep did not write out/sweep/c.csv"

# 10. command-line mistakes: one line, "attnlab: error: <option>: …", exit 2; --help still prints the usage.
for args in "run" "run --config $tmp/ok.json --bogus" "" "capacity --context abc" "run --config ." "run --config $tmp/ok.json --json ''"; do
  eval "\"\$bin\" $args" >/dev/null 2>"$tmp/err"
  code=$?
  [ "$code" -eq 2 ] || fail "attnlab $args: exit code $code, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "attnlab $args: stderr is not one line: $(cat "$tmp/err")"
  grep -q "^attnlab: error: " "$tmp/err" || fail "attnlab $args: no 'attnlab: error:' prefix: $(cat "$tmp/err")"
done
"$bin" --help | grep -q "Usage:" || fail "attnlab --help prints no usage"
"$bin" run --help | grep -q -- "--config" || fail "attnlab run --help does not list --config"

# 11. output files: an existing file is replaced only when attnlab wrote it, as that option's kind (results
# JSON, sweep CSV, measurements JSON, GPU spec); any other file is refused before anything runs — exit 2,
# one line, its bytes unchanged (compared by checksum), nothing written beside it.
foreign_files() {  # writes the foreign files every output option is tried against into $tmp/foreign-files/
  rm -rf "$tmp/foreign-files" && mkdir -p "$tmp/foreign-files"
  printf 'my notes\n' >"$tmp/foreign-files/notes.txt"
  : >"$tmp/foreign-files/empty"
  printf '\x89PNG\r\n\x1a\n\0\0\0\xff\xfe binary' >"$tmp/foreign-files/binary"
  printf '{"schema": "someone.else/1", "measurements": []}\n' >"$tmp/foreign-files/other.json"
  printf 'block_c,variant\n16,mine\n' >"$tmp/foreign-files/other.csv"
  awk '/^ "schema":/ {exit} {print}' "$tmp/run.json" >"$tmp/foreign-files/truncated.json"  # attnlab's, cut before its schema
}
check_file_refused() {  # name, file, expected substring, command…
  local name=$1 file=$2 want=$3
  shift 3
  local before
  before=$(sha256sum <"$file")
  "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  [ "$code" -eq 2 ] || fail "$name: exit code $code, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: stderr is not one line: $(cat "$tmp/err")"
  grep -q -- "$want" "$tmp/err" || fail "$name: stderr lacks '$want': $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "$name: something ran before the refusal: $(head -1 "$tmp/out")"
  [ "$(sha256sum <"$file")" = "$before" ] || fail "$name: the file was changed"
  ls -a "$(dirname "$file")" | grep -q "\.tmp-" && fail "$name: a temporary file was left behind"
}
foreign_files
[ -s "$tmp/foreign-files/truncated.json" ] || fail "no truncated results to try"
grep -q '"schema"' "$tmp/foreign-files/truncated.json" && fail "the truncated results still hold the schema"
for f in "$tmp"/foreign-files/*; do
  n=$(basename "$f")
  check_file_refused "run --json over $n" "$f" "^attnlab: error: --json: '.*$n': exists and is not attnlab results JSON: give a new file name or remove it; nothing was changed$" \
    "$bin" run --config "$tmp/ok.json" --json "$f"
  [ -e "$f.arrays" ] && fail "run --json over $n: wrote $n.arrays"
  check_file_refused "sweep --csv over $n" "$f" "^attnlab: error: --csv: .*exists and is not an attnlab sweep CSV" \
    "$bin" sweep --config "$tmp/sweep.json" --vary data.seed=1,2 --csv "$f"
  check_file_refused "bench --out over $n" "$f" "^attnlab: error: --out: .*exists and is not attnlab measurements JSON" \
    "$bin" bench --config "$tmp/ok.json" --out "$f"
  # calibrate writes into the spec it reads: a file that is not a spec is refused, by name, unchanged.
  check_file_refused "calibrate --gpu $n" "$f" "^attnlab: error: .*$n" \
    "$bin" calibrate --measurements "$meas" --gpu "$f"
done
# The newcomer's case: notes.txt in the working folder.
mkdir -p "$tmp/newcomer" && printf 'my notes\n' >"$tmp/newcomer/notes.txt"
check_file_refused "run --json notes.txt" "$tmp/newcomer/notes.txt" "--json: 'notes.txt': exists and is not attnlab results JSON" \
  sh -c "cd '$tmp/newcomer' && '$bin' run --config '$tmp/ok.json' --json notes.txt"
[ "$(ls -A "$tmp/newcomer")" = "notes.txt" ] || fail "run --json notes.txt wrote beside it: $(ls -A "$tmp/newcomer")"
# run --json FILE's arrays go to FILE.arrays/: a folder attnlab did not make is refused before the run.
mkdir -p "$tmp/arrays-run.json.arrays" && printf 'mine\n' >"$tmp/arrays-run.json.arrays/mine.txt"
check_file_refused "run --json beside a foreign FILE.arrays" "$tmp/arrays-run.json.arrays/mine.txt" \
  "^attnlab: error: --json: .*arrays-run.json.arrays': is a folder attnlab did not create" \
  "$bin" run --config "$tmp/long.json" --json "$tmp/arrays-run.json"
[ -e "$tmp/arrays-run.json" ] && fail "run --json beside a foreign FILE.arrays: wrote FILE"
# The default sweep CSV (out/sweep/<config>.csv) is an output file like --csv.
printf 'my notes\n' >"$tmp/cwd/out/sweep/c.csv"
check_file_refused "sweep over a foreign default CSV" "$tmp/cwd/out/sweep/c.csv" "^attnlab: error: --csv: 'out/sweep/c.csv': exists and is not an attnlab sweep CSV" \
  sh -c "cd '$tmp/cwd' && '$bin' sweep --config c.json --vary data.seed=1,2"
# attnlab's own previous output of each kind is replaced: a new file renamed over it (a new inode).
replaced() {  # name, file, command…
  local name=$1 file=$2
  shift 2
  local inode
  inode=$(stat -c %i "$file")
  "$@" >/dev/null 2>"$tmp/err" || fail "$name: exited $?: $(cat "$tmp/err")"
  [ "$(stat -c %i "$file")" != "$inode" ] || fail "$name: attnlab's own previous file was not replaced"
}
replaced "run --json over its own results" "$tmp/run.json" "$bin" run --config "$tmp/ok.json" --json "$tmp/run.json"
grep -q '"schema": "attnlab.results/2"' "$tmp/run.json" || fail "run --json over its own results: no results written"
replaced "run --json over its own results and arrays" "$tmp/long-run.json" \
  "$bin" run --config "$tmp/long.json" --json "$tmp/long-run.json"
[ -f "$tmp/long-run.json.arrays/flash2.reference.lse.npy" ] || fail "run --json over its own arrays: no sidecar"
replaced "sweep --csv over its own CSV" "$tmp/sweep.csv" \
  "$bin" sweep --config "$tmp/sweep.json" --vary block_c=16,32 --vary data.seed=1,2 --csv "$tmp/sweep.csv"
rm -rf "$tmp/cwd/out" && (cd "$tmp/cwd" && "$bin" sweep --config c.json --vary data.seed=1,2 >/dev/null 2>&1)
replaced "sweep over its own default CSV" "$tmp/cwd/out/sweep/c.csv" \
  sh -c "cd '$tmp/cwd' && '$bin' sweep --config c.json --vary data.seed=1,2"
replaced "calibrate over its own spec" "$tmp/specs/h100-sxm5.json" \
  env ATTNLAB_SPECS="$tmp/specs" "$bin" calibrate --measurements "$meas"
# bench writes measurements only where a kernel ran; its own previous file (a bench of an H100, shipped)
# is accepted here and replaced where a GPU is.
cp "$meas" "$tmp/bench.json"
"$bin" bench --config "$tmp/ok.json" --out "$tmp/bench.json" >/dev/null 2>"$tmp/err" ||
  fail "bench --out over its own measurements exited $?: $(cat "$tmp/err")"
grep -q '"schema": "attnlab.measurements/1"' "$tmp/bench.json" || fail "bench --out: its measurements are gone"

# Inputs (issue 38): the model alone needs no data, at sizes whose data would not fit; gpu_model and --gpu name a
# spec by id or by a .json path, never a path that climbs anywhere else.
cat >"$tmp/model-big.json" <<'JSON'
{"problem": {"batch": 16, "q_heads": 32, "kv_heads": 32, "q_len": 1, "kv_len": 32768, "head_dim": 128,
 "phase": "decode"}, "variants": [{"id": "flash2"}], "backends": ["reference", "model"]}
JSON
ATTNLAB_MAX_MEMORY_GB=1 "$bin" run --config "$tmp/model-big.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "the reference at B 16, 32 heads, 32k keys under 1 GiB: exit code not 2"
grep -q "the model backend alone needs no data" "$tmp/err" || fail "the memory refusal does not point at the model: $(cat "$tmp/err")"
out=$(ATTNLAB_MAX_MEMORY_GB=1 "$bin" run --config "$tmp/model-big.json" --backend model --json "$tmp/model-big-run.json" 2>"$tmp/err") ||
  fail "a model-only run at B 16, 32 heads, 32k keys was refused: $(cat "$tmp/err")"
echo "$out" | grep -qE "^flash2 +model" || fail "the model-only run has no flash2 model row: $out"
grep -q '"data_note"' "$tmp/model-big-run.json" || fail "the model-only run's results.json does not say no data was made"
for gpu in ../../../../etc/passwd /etc/passwd; do
  "$bin" run --config "$tmp/ok.json" --backend model --gpu "$gpu" >/dev/null 2>"$tmp/err"
  [ $? -eq 2 ] || fail "--gpu $gpu: exit code not 2"
  grep -q "^attnlab: error: --gpu: '$gpu' is neither a GPU id" "$tmp/err" || fail "--gpu $gpu: $(cat "$tmp/err")"
done
small 's/"backends"/"gpu_model": "..\/..\/..\/..\/etc\/passwd", "backends"/' >"$tmp/gpu-climbs.json"
"$bin" run --config "$tmp/gpu-climbs.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "gpu_model ../../../../etc/passwd: exit code not 2"
grep -q "^attnlab: error: gpu_model: '../../../../etc/passwd' is neither a GPU id" "$tmp/err" ||
  fail "gpu_model ../../../../etc/passwd: $(cat "$tmp/err")"

echo "cli: $failures failed"
[ "$failures" -eq 0 ]
