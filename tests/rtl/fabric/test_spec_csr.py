#!/usr/bin/env python3
"""Unit test of scripts/spec_csr.py: every spec register is decoded at its offset, bindings fail loudly, output is fresh."""
import copy
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import gen_spec  # noqa: E402
import spec_csr  # noqa: E402


class SpecCsrTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.spec = gen_spec.load_spec(ROOT)
        cls.sv = spec_csr.gen_csr_sv(cls.spec)

    def test_every_register_decoded_at_its_offset(self):
        regs = self.spec["regs"]
        aw = regs["addr_bits"]
        for r in regs["global"]:
            for i in range(r.get("count", 1)):
                off = r["offset"] + i * r.get("stride", 4)
                if r["access"] in ("ro", "rw", "w1c"):
                    self.assertRegex(self.sv, r"%d'h%03X: rd_word = .*// %s" % (aw, off, r["name"]))
        sh = (regs["core_stride"]).bit_length() - 1
        for r in regs["core"] + [regs["core_ctr_clear"]]:
            self.assertIn("%d'h%02X:" % (sh, r["offset"]), self.sv, r["name"])
        for i, c in enumerate(regs["core_counters"]):
            lo = regs["core_counters_base"] + 8 * i
            self.assertIn("%d'h%02X: rd_word = counters_i" % (sh, lo), self.sv)
            self.assertIn("// %s_HI" % c["name"], self.sv)

    def test_generated_file_is_fresh(self):
        with open(os.path.join(ROOT, "rtl", "generated", "loom_csr.sv")) as f:
            self.assertEqual(f.read(), self.sv)

    def test_moved_register_moves_in_rtl(self):
        spec = copy.deepcopy(self.spec)
        for r in spec["regs"]["global"]:
            if r["name"] == "SCRATCH":
                r["offset"] = 0x030
        sv = spec_csr.gen_csr_sv(spec)
        self.assertIn("12'h030: scratch_d", sv)
        self.assertNotIn("12'h00C: scratch_d", sv)

    def test_unbound_read_only_register_fails(self):
        spec = copy.deepcopy(self.spec)
        spec["regs"]["core"].append({"name": "MYSTERY", "offset": 0x38, "access": "ro", "doc": ""})
        with self.assertRaises(ValueError):
            spec_csr.gen_csr_sv(spec)

    def test_new_rw_register_is_generic(self):
        spec = copy.deepcopy(self.spec)
        spec["regs"]["core"].append({"name": "PRIORITY", "offset": 0x38, "access": "rw", "doc": ""})
        sv = spec_csr.gen_csr_sv(spec)
        self.assertIn("output logic [NumCores*32-1:0] priority_o", sv)
        self.assertTrue(re.search(r"8'h38: rd_word = priority_q", sv))


if __name__ == "__main__":
    unittest.main()
