#!/usr/bin/env python3
"""The SASS and Nsight Compute readers of kernels/bench (standard library only; run by ctest).

sass_text.py and wait_placement.py on SASS written here:

- After a wait for S (`WARPGROUP.DEPBAR.LE gsb0, 0x1`) the softmax up to the wait for P·V (`… 0x0`) counts as
  "under P·V", from there to the span's end as "after"; predicated instructions count by their opcode.
- A span ends at the next MMA issue (WARPGROUP.ARRIVE), the next wait 1, or a backward branch — to a label seen
  before (cuobjdump's `(.L_x_N)`) or to a lower address (0x…); a forward branch does not end it. A span that the
  loop's end closes before any wait 0 (flash2 v7's order at 128 keys: the wait at the next iteration's top) says so.
- A wait 0 outside a span (the prologue's, the loop top's, the epilogue's) opens nothing; lines that are not
  instructions (headers, labels, encodings, blank lines) count as nothing; each kernel of a dump
  (`Function : NAME`) is read apart; a line without an address (an encoding, "Fatbin … code:") is no instruction.

ncu_csv.launches on a `--csv` table with the program's output around it; opcode_diff.opcodes on the committed
Nsight Compute text of 2026-12-06, whose per-opcode counts must add up to the total ncu printed beside them.

cta_timeline.py on a timeline CSV written here (one SM, two CTAs): the steady tile, fill, drain, epilogue, the gap
between CTAs, the boundary between blocks, the ping-pong offset, the producer's Q and K, the tiles' share, and the
GPU-wide clock's span, start skew and idle tail (two SMs); bad files refused (exit 2).

locked_clocks.py --peers-from: an earlier call's peers fill the shapes this call lacks (marked, ratios against them),
never one this call has; an earlier file of another GPU, or not a locked-clocks file, is refused with one line and
exit 2, and no output is written.
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "bench")
sys.path.insert(0, BENCH)
import ncu_csv  # noqa: E402
import opcode_diff  # noqa: E402
import sass_text  # noqa: E402
import wait_placement  # noqa: E402


def sass(*body):
    return [f"        /*{16 * i:04x}*/                   {line} ;" for i, line in enumerate(body)]


class WaitPlacement(unittest.TestCase):
    def test_softmax_under_and_after(self):  # v6's layout: the wait for P·V after the wait for S
        lines = ["\tFunction : kernel", ".L_x_7:"] + sass(
            "WARPGROUP.DEPBAR.LE gsb0, 0x0",  # the prologue's wait: no span
            "MUFU.EX2 R1, R2",
            "WARPGROUP.ARRIVE",
            "HGMMA.64x176x16.F32 R24, gdesc[UR4], R24",
            "WARPGROUP.DEPBAR.LE gsb0, 0x1",
            "FMNMX R1, R2, R3, !PT",
            "@!P0 FMNMX R4, R5, R6, !PT",
            "@P1 BRA `(.L_x_9)",  # forward: the span goes on
            "MUFU.EX2 R7, R8",
            "WARPGROUP.DEPBAR.LE gsb0, 0x0",
            "F2FP.F16.F32.PACK_AB R1, R2, R3",
            "FMUL R9, R9, R10",
            "@P1 MUFU.EX2 R11, R12",
            "@P0 BRA `(.L_x_7)",  # backward: the loop's end
            "FMUL R9, R9, R10",  # the epilogue: no span
        )
        spans = wait_placement.placements(lines)
        self.assertEqual(len(spans), 1)
        self.assertEqual(spans[0]["under"], {"MUFU": 1, "FMNMX": 2, "F2FP": 0, "FMUL": 0})
        self.assertEqual(spans[0]["after"], {"MUFU": 1, "FMNMX": 0, "F2FP": 1, "FMUL": 1})
        self.assertEqual(spans[0]["closed_by"], "wait 0")

    def test_wait_at_the_next_iterations_top(self):  # the wait moved past the loop's end: it closes the span
        lines = [".L_x_1:"] + sass(
            "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R3+URZ], R0",
            "WARPGROUP.DEPBAR.LE gsb0, 0x0",  # the loop top's wait for the last P·V: outside any span
            "F2FP.F16.F32.PACK_AB R1, R2, R3",
            "WARPGROUP.ARRIVE",
            "WARPGROUP.DEPBAR.LE gsb0, 0x1",
            "FMNMX R1, R2, R3, !PT",
            "MUFU.EX2 R1, R2",
            "MUFU.EX2 R3, R4",
            "@P0 BRA `(.L_x_1)",
            "WARPGROUP.DEPBAR.LE gsb0, 0x0",  # the epilogue's
            "F2FP.F16.F32.PACK_AB R1, R2, R3",
        )
        spans = wait_placement.placements(lines)
        self.assertEqual(len(spans), 1)
        self.assertEqual(spans[0]["under"], {"MUFU": 2, "FMNMX": 1, "F2FP": 0, "FMUL": 0})
        self.assertIsNone(spans[0]["after"])
        self.assertEqual(spans[0]["closed_by"], "loop's end")

    def test_address_targets_and_the_next_issue(self):
        lines = sass(
            "WARPGROUP.DEPBAR.LE gsb0, 0x1", "MUFU.EX2 R1, R2", "@P0 BRA 0x0000",  # to 0x0000: backward
            "WARPGROUP.DEPBAR.LE gsb0, 0x1", "FMNMX R1, R2, R3", "@P0 BRA 0x00f0",  # forward
            "WARPGROUP.DEPBAR.LE gsb0, 0x0", "FMUL R1, R1, R2", "WARPGROUP.ARRIVE", "FMUL R1, R1, R2",
        )
        spans = wait_placement.placements(lines)
        self.assertEqual([s["closed_by"] for s in spans], ["loop's end", "wait 0"])
        self.assertEqual(spans[1]["under"]["FMNMX"], 1)
        self.assertEqual(spans[1]["after"]["FMUL"], 1)  # the FMUL after the next issue is not the span's

    def test_functions_read_apart(self):
        dump = ["", "Fatbin elf code:", "\tFunction : _Zkernel_a"] + sass(
            "WARPGROUP.DEPBAR.LE gsb0, 0x1", "MUFU.EX2 R1, R2") + ["\tFunction : _Zkernel_b"] + sass(
            "WARPGROUP.DEPBAR.LE gsb0, 0x0", "MUFU.EX2 R1, R2")
        kernels = dict(sass_text.functions(dump))
        self.assertEqual(sorted(kernels), ["", "_Zkernel_a", "_Zkernel_b"])
        # kernel a's wait 1 is not closed by kernel b's wait 0: each kernel is read apart
        self.assertEqual([s["closed_by"] for s in wait_placement.placements(kernels["_Zkernel_a"])], [None])
        self.assertEqual(wait_placement.placements(kernels["_Zkernel_b"]), [])
        self.assertEqual([s["closed_by"] for s in wait_placement.placements(dump)], ["wait 0"])  # read as one

    def test_opcode(self):
        self.assertEqual(sass_text.opcode("        /*0a80*/                   @!P0 FMNMX R1, R2 ;"), "FMNMX")
        self.assertEqual(sass_text.opcode("        /*0a90*/                   MUFU.EX2 R1, R2 ;"), "MUFU.EX2")
        self.assertEqual(sass_text.opcode("  /*0aa0*/  @P2 F2FP.F16.F32.PACK_AB R1, R2, R3 ;  /* 0x000fe20000000000 */"),
                         "F2FP.F16.F32.PACK_AB")
        self.assertIsNone(sass_text.opcode(".L_x_3:"))
        self.assertIsNone(sass_text.opcode("        /* 0x000fe200078e00ff */"))
        self.assertIsNone(sass_text.opcode(""))


class SassText(unittest.TestCase):
    def test_instructions(self):
        lines = ["\tFunction : k", ".L_x_2:"] + sass("@P0 MUFU.EX2 R1, R2", "IADD3 R1, R1, 0x1, RZ") + [
            "        /* 0x000fe20000000000 */", "\tFatbin ptx code:"] + sass(
            "", "", "@!P1 BRA `(.L_x_2)", "BRA 0x0100")  # two empty slots: these addresses go on from 0x20
        ins = list(sass_text.instructions(lines))
        self.assertEqual([x.opcode for x in ins], ["MUFU.EX2", "IADD3", "BRA", "BRA"])
        self.assertEqual([x.address for x in ins], [0x00, 0x10, 0x20, 0x30])
        self.assertEqual([x.backward for x in ins], [False, False, True, False])  # to .L_x_2 = 0x00; 0x100 ahead
        self.assertEqual(ins[0].text, "@P0 MUFU.EX2 R1, R2")


class NcuCsv(unittest.TestCase):
    def test_launches(self):
        lines = [
            "==PROF== Connected to process 1",
            "variant  shape  median (ms)",  # the program's own output
            '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"',
            '"1","k_b","gpu__time_duration.sum","ns","2,500"',
            '"0","k_a","gpu__time_duration.sum","ns","1,234"',
            '"0","k_a","sm__cycles_elapsed.avg.per_second","Hz","1,410,000,000"',
            "==PROF== Disconnected from process 1",
        ]
        self.assertEqual(ncu_csv.launches(lines), [
            (0, "k_a", {"gpu__time_duration.sum": "1234", "sm__cycles_elapsed.avg.per_second": "1410000000"}),
            (1, "k_b", {"gpu__time_duration.sum": "2500"})])


class OpcodeDiff(unittest.TestCase):
    def test_counts_add_up_to_ncus_total(self):
        path = os.path.join(BENCH, "h100-flash2-fa3-cudnn-ncu-2026-12-06.txt")
        counts = opcode_diff.opcodes(path)
        self.assertEqual(sum(counts.values()), 313_884_930)  # "sass__inst_executed_per_opcode 313,884,930 (FFMA: …"
        self.assertEqual(counts["FFMA"], 41_156_608)  # a count wrapped onto the next line in ncu's text
        self.assertGreater(len(counts), 50)


class LockedClocksPeersFrom(unittest.TestCase):
    GPU = "NVIDIA H100 80GB HBM3"

    def run_script(self, earlier):
        with tempfile.TemporaryDirectory() as d:
            clk = os.path.join(d, "clk")
            os.mkdir(clk)
            # Ours at N 4k: 3 launches of 1.0 ms at 1.4 GHz (1 400 k cycles); cuDNN measured in this call at N 4k.
            rows = ['"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"']
            for i in range(3):
                rows += [f'"{i}","flash2_sm90_kernel","gpu__time_duration.sum","ns","1,000,000"',
                         f'"{i}","flash2_sm90_kernel","sm__cycles_elapsed.avg.per_second","hz","1,400,000,000"']
            with open(os.path.join(clk, "flash2_A__4096__0.csv"), "w") as f:
                f.write("\n".join(["==PROF== Connected to process 1"] + rows) + "\n")
            cudnn = ['"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'] + [
                f'"{i}","cudnn_kernel","{m}","x","{v}"' for i in range(3)
                for m, v in (("gpu__time_duration.sum", "700,000"), ("sm__cycles_elapsed.avg.per_second", "1,400,000,000"))]
            with open(os.path.join(clk, "sdpa_cudnn__4096__0.csv"), "w") as f:
                f.write("\n".join(cudnn) + "\n")
            earlier_path = os.path.join(d, "earlier.json")
            with open(earlier_path, "w") as f:
                f.write(earlier if isinstance(earlier, str) else json.dumps(earlier))
            out = os.path.join(d, "out.json")
            done = subprocess.run([sys.executable, os.path.join(BENCH, "locked_clocks.py"), clk, "--calls", "3",
                                   "--gpu", self.GPU, "--out", out, "--peers-from", earlier_path],
                                  capture_output=True, text=True)
            result = None
            if os.path.exists(out):
                with open(out) as f:
                    result = json.load(f)
            return done, result

    def earlier(self, gpu):
        row = dict(ms_locked=1.0, sm_ghz=1.4, launches=3, kernels=["k"])
        return {"schema": "attnlab.locked_clocks/1", "gpu": gpu, "rows": [
            dict(row, impl="fa3_bf16", len=4096, causal=False, kcycles=1200.0),
            dict(row, impl="sdpa_cudnn", len=4096, causal=False, kcycles=9999.0),  # this call has its own
            dict(row, impl="flash2_old", len=4096, causal=False, kcycles=1.0)]}  # ours: never taken

    def test_peers_fill_what_the_call_lacks(self):
        done, result = self.run_script(self.earlier(self.GPU))
        self.assertEqual(done.returncode, 0, done.stderr)
        impls = {r["impl"]: r for r in result["rows"]}
        self.assertEqual(sorted(impls), ["fa3_bf16", "flash2_A", "sdpa_cudnn"])
        self.assertIn("from", impls["fa3_bf16"])
        self.assertNotIn("from", impls["sdpa_cudnn"])
        self.assertEqual(impls["sdpa_cudnn"]["kcycles"], 980.0)  # 3 × 0.7 ms at 1.4 GHz, per call
        self.assertIn("xfa3_bf16=0.857", done.stdout)  # 1 200 / 1 400
        self.assertIn("xsdpa_cudnn=0.700", done.stdout)
        self.assertIn("fa3_bf16*", done.stdout)

    def test_another_gpus_file_is_refused(self):
        done, result = self.run_script(self.earlier("NVIDIA H200"))
        self.assertEqual(done.returncode, 2)
        self.assertIn("measured on NVIDIA H200", done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1)
        self.assertIsNone(result)

    def test_a_file_of_another_kind_is_refused(self):
        for earlier in ("{not json", {"schema": "attnlab.measurements/1", "rows": []}):
            done, result = self.run_script(earlier)
            self.assertEqual(done.returncode, 2, earlier)
            self.assertEqual(len(done.stderr.strip().splitlines()), 1)
            self.assertIsNone(result)


class CtaTimeline(unittest.TestCase):
    """cta_timeline.py on a timeline written here: one SM, two grid CTAs of one block each, 4 tiles, two warpgroups."""

    HEADER = ("block,group,sm,tiles,cta_start_ns,cta_start,block_start,first_issue,first_scores,last_scores,"
              "last_pv_issue,loop_done,stored,q_issued,k_issued,stored_ns,staged,met")

    def lines(self):
        # CTA 1 starts at 1 000, CTA 2 at 2 600 (its predecessor's last O stored at 2 500: a gap of 100). Tiles 100
        # cycles apart; warpgroup 1 50 behind warpgroup 0; fill 900 (warpgroup 1: 950), its first S issued 700 before
        # it landed; drain 100, its last P·V issued 30 after the last S landed; epilogue 50. Block 1's Q issued by the
        # producer 200 before its first S's issue, 400 after block 0's last S landed (none for block 0: its
        # consumers' copy); both blocks' first K issued 100 before warpgroup 0's first issue. Block 1's O goes out
        # through shared memory: staged 20 after the loop's end, the warps met 10 later, stored 20 after that (block
        # 0's from registers: no parts).
        rows = []
        for block, start in ((0, 1000), (1, 2600)):
            for group in (0, 1):
                first = start + 1000 + 50 * group
                q_issued = first - 900 if block == 1 else 0
                k_issued = start + 200 if group == 0 else 0
                rows.append(f"{block},{group},7,4,{start},{start},{start + 100},{first - 700},{first},{first + 300},"
                            f"{first + 330},{first + 400},{first + 450},{q_issued},{k_issued},{first + 450},"
                            + (f"{first + 420},{first + 430}" if block == 1 else "0,0"))
        return ["# flash2_timeline: a test", self.HEADER] + rows

    def records(self):  # the lines' records as cta_timeline.read gives them
        import cta_timeline
        return [dict(zip(cta_timeline.FIELDS, map(int, line.split(",")))) for line in self.lines()[2:]]

    def run_on(self, lines):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            return subprocess.run([sys.executable, os.path.join(BENCH, "cta_timeline.py"), path],
                                  capture_output=True, text=True)

    def test_quantities(self):
        import cta_timeline
        out, steady, share, sms = cta_timeline.summarize(self.records())
        self.assertEqual(steady, 100.0)
        self.assertEqual(sms, 1)
        self.assertEqual(sorted(out["fill"]), [900, 900, 950, 950])
        self.assertEqual(sorted(out["to issue"]), [200, 200, 250, 250])
        self.assertEqual(set(out["first S"]), {700})
        self.assertEqual(set(out["drain"]), {100})
        self.assertEqual(set(out["to last P·V"]), {30})
        self.assertEqual(set(out["last P·V"]), {70})
        self.assertEqual(set(out["epilogue"]), {50})
        self.assertEqual((out["stage"], out["meet"], out["store"]), ([20, 20], [10, 10], [20, 20]))  # block 1 only
        self.assertEqual(out["setup"], [100, 100])
        self.assertEqual(out["gap"], [100])  # 2 600 − 2 500
        self.assertEqual(out["boundary"], [1200, 1200])  # 3 600 − 2 300 − 100, for each warpgroup
        self.assertEqual(out["ping-pong"], [50, 50])
        self.assertEqual(out["Q to S"], [200, 200])
        self.assertEqual(sorted(out["K to S"]), [100, 100, 150, 150])
        self.assertEqual(out["Q reload"], [400, 400])  # 3 600 − 900 − 2 300 (warpgroup 1: 3 650 − 900 − 2 350)
        self.assertAlmostEqual(share, 8 * 100 / (4100 - 1000))  # two blocks' 4 tiles over the SM's 3 100 cycles
        done = self.run_on(self.lines())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("boundary           1200", done.stdout)
        self.assertRegex(done.stdout, r"\n  stage +20 \(20–20\)")
        self.assertIn("12.00 tiles", done.stdout)
        # One SM, its ns equal to its cycles here: span 1 000 → 4 100, no skew, no idle SM.
        self.assertEqual(cta_timeline.gpu_clock(self.records()), (3100, 0, 0))
        self.assertIn("span 3.1 µs", done.stdout)

    def test_each_warpgroup_reads_the_ctas_start(self):
        # On the GPU each warpgroup reads the CTA's start clock itself, cycles apart (warpgroup 1 here 3 later): the
        # two records are still one CTA — one setup, one gap per SM — where keying CTAs by their start split them and
        # made the gap negative.
        import cta_timeline
        rows = self.records()
        for r in rows:
            r["cta_start"] += 3 * r["group"]
        out, steady, share, sms = cta_timeline.summarize(rows)
        self.assertEqual(out["setup"], [100, 100])
        self.assertEqual(out["gap"], [100])
        self.assertAlmostEqual(share, 8 * 100 / (4100 - 1000))

    def test_the_gpus_clock(self):  # two SMs: SM 2 starts 100 ns after SM 1 and stores its last O 400 ns before it
        import cta_timeline
        zero = dict.fromkeys(cta_timeline.FIELDS, 0)
        rows = [dict(zero, sm=1, cta_start_ns=0, stored_ns=1000), dict(zero, sm=2, cta_start_ns=100, stored_ns=600),
                dict(zero, sm=2, cta_start_ns=100, stored_ns=500, group=1)]
        self.assertEqual(cta_timeline.gpu_clock(rows), (1000, 100, 200))  # idle: (0 + 400) / 2

    def test_bad_files_are_refused(self):
        header_missing = self.lines()[:1] + self.lines()[2:]
        short_line = self.lines() + ["1,0,7"]
        not_a_number = self.lines() + ["1,0,7,4,x,1,1,1,1,1,1,1,1,1,1,1,1,1"]
        bad_group = self.lines() + ["1,2,7,4,1,1,1,1,1,1,1,1,1,1,1,1,1,1"]
        for lines, says in ((header_missing, "no header line"), (short_line, "line 7: 3 fields"),
                            (not_a_number, "line 7: a field is not an integer"), (bad_group, "group must be 0 or 1")):
            done = self.run_on(lines)
            self.assertEqual(done.returncode, 2, says)
            self.assertEqual(len(done.stderr.strip().splitlines()), 1)
            self.assertIn(says, done.stderr)
            self.assertEqual(done.stdout, "")


if __name__ == "__main__":
    unittest.main()
