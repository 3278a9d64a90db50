#!/usr/bin/env python3
"""kernels/bench/wait_placement.py on SASS written here (standard library only; run by ctest).

- The softmax between a kernel's wait for S (`WARPGROUP.DEPBAR.LE gsb0, 0x1`) and its wait for P·V (`… 0x0`) counts as
  "under P·V", what follows the wait 0 as "after"; predicated instructions count by their opcode.
- A wait 0 before any wait 1 (the prologue's wait for S_0) opens no span; a wait 1 with no wait 0 after it (a loop
  whose P·V wait is at the next iteration's top, textually before) gives none either.
- Lines that are not instructions (headers, `.L_x_1:` labels, blank lines) count as nothing; each kernel of a dump
  (`Function : NAME`) is read apart.
"""
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "bench"))
import wait_placement  # noqa: E402


def sass(*body):
    return [f"        /*{16 * i:04x}*/                   {line} ;" for i, line in enumerate(body)]


class WaitPlacement(unittest.TestCase):
    def test_softmax_under_and_after(self):
        lines = ["\tFunction : kernel", ".L_x_7:"] + sass(
            "WARPGROUP.DEPBAR.LE gsb0, 0x0",  # the prologue's wait: no span
            "MUFU.EX2 R1, R2",
            "WARPGROUP.DEPBAR.LE gsb0, 0x1",
            "FMNMX R1, R2, R3, !PT",
            "@!P0 FMNMX R4, R5, R6, !PT",
            "MUFU.EX2 R7, R8",
            "WARPGROUP.DEPBAR.LE gsb0, 0x0",
            "F2FP.F16.F32.PACK_AB R1, R2, R3",
            "FMUL R9, R9, R10",
            "@P1 MUFU.EX2 R11, R12",
        )
        spans = wait_placement.placements(lines)
        self.assertEqual(len(spans), 1)
        self.assertEqual(spans[0]["under"], {"MUFU": 1, "FMNMX": 2, "F2FP": 0, "FMUL": 0})
        self.assertEqual(spans[0]["after"], {"MUFU": 1, "FMNMX": 0, "F2FP": 1, "FMUL": 1})

    def test_two_iterations_and_an_unclosed_wait(self):
        lines = sass(
            "WARPGROUP.DEPBAR.LE gsb0, 0x1", "FMNMX R1, R2, R3", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "MUFU.EX2 R1, R2",
            "WARPGROUP.DEPBAR.LE gsb0, 0x1", "MUFU.EX2 R1, R2", "MUFU.EX2 R3, R4", "WARPGROUP.DEPBAR.LE gsb0, 0x0",
            "WARPGROUP.DEPBAR.LE gsb0, 0x1", "MUFU.EX2 R1, R2",  # never closed: not a span
        )
        spans = wait_placement.placements(lines)
        self.assertEqual([s["under"]["FMNMX"] for s in spans], [1, 0])
        self.assertEqual([s["under"]["MUFU"] for s in spans], [0, 2])
        self.assertEqual([s["after"]["MUFU"] for s in spans], [1, 0])

    def test_functions_read_apart(self):
        dump = ["", "Fatbin elf code:", "\tFunction : _Zkernel_a"] + sass(
            "WARPGROUP.DEPBAR.LE gsb0, 0x1", "MUFU.EX2 R1, R2") + ["\tFunction : _Zkernel_b"] + sass(
            "WARPGROUP.DEPBAR.LE gsb0, 0x0", "MUFU.EX2 R1, R2")
        kernels = dict(wait_placement.functions(dump))
        self.assertEqual(sorted(kernels), ["", "_Zkernel_a", "_Zkernel_b"])
        # kernel a's wait 1 is not closed by kernel b's wait 0: each kernel is read apart
        self.assertEqual(wait_placement.placements(kernels["_Zkernel_a"]), [])
        self.assertEqual(wait_placement.placements(kernels["_Zkernel_b"]), [])
        self.assertEqual(len(wait_placement.placements(dump)), 1)  # read as one, they would be

    def test_opcode(self):
        self.assertEqual(wait_placement.opcode("        /*0a80*/                   @!P0 FMNMX R1, R2 ;"), "FMNMX")
        self.assertEqual(wait_placement.opcode("        /*0a90*/                   MUFU.EX2 R1, R2 ;"), "MUFU.EX2")
        self.assertEqual(wait_placement.opcode("  /*0aa0*/  @P2 F2FP.F16.F32.PACK_AB R1, R2, R3 ;  /* 0x000fe20000000000 */"),
                         "F2FP.F16.F32.PACK_AB")
        self.assertIsNone(wait_placement.opcode(".L_x_3:"))
        self.assertIsNone(wait_placement.opcode("        /* 0x000fe200078e00ff */"))
        self.assertIsNone(wait_placement.opcode(""))


if __name__ == "__main__":
    unittest.main()
