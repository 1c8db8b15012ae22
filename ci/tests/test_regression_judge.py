import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import regression_judge as rj  # noqa: E402


class JudgeTest(unittest.TestCase):
    def test_unchanged_is_same(self):
        v, r, lo, hi = rj.judge(1.00, (0.997, 1.003), 1.001, (0.998, 1.004), 0.02)
        self.assertEqual(v, rj.SAME)
        self.assertLess(lo, 1.0)
        self.assertGreater(hi, 1.0)

    def test_clear_slowdown_is_slower_and_confirmed(self):
        v, r, _, _ = rj.judge(0.90, (0.895, 0.905), 1.00, (0.997, 1.003), 0.02)
        self.assertEqual(v, rj.SLOWER)
        self.assertTrue(rj.confirmed_slowdown(v, r, 0.02))

    def test_small_significant_slowdown_is_not_a_failure(self):
        v, r, _, _ = rj.judge(0.99, (0.989, 0.991), 1.00, (0.999, 1.001), 0.02)
        self.assertEqual(v, rj.SLOWER)
        self.assertFalse(rj.confirmed_slowdown(v, r, 0.02))

    def test_clear_gain_is_faster(self):
        v, _, _, _ = rj.judge(1.10, (1.09, 1.11), 1.00, (0.995, 1.005), 0.02)
        self.assertEqual(v, rj.FASTER)

    def test_noisy_is_ambiguous(self):
        v, _, _, _ = rj.judge(1.00, (0.95, 1.05), 1.00, (0.99, 1.01), 0.02)
        self.assertEqual(v, rj.AMBIGUOUS)

    def test_bad_input_raises(self):
        with self.assertRaises(ValueError):
            rj.judge(0.0, (0.9, 1.1), 1.0, (0.9, 1.1), 0.02)
        with self.assertRaises(ValueError):
            rj.judge(1.0, (1.1, 0.9), 1.0, (0.9, 1.1), 0.02)

    def test_geomean_merge(self):
        g, lo, hi = rj.geomean_with_ci([(2.0, 1.9, 2.1), (0.5, 0.49, 0.51)])
        self.assertAlmostEqual(g, 1.0, places=12)
        self.assertLess(lo, 1.0)
        self.assertGreater(hi, 1.0)
        # Identical scenarios: the interval shrinks by sqrt(n).
        one = rj.geomean_with_ci([(1.0, 0.98, 1.02)])
        four = rj.geomean_with_ci([(1.0, 0.98, 1.02)] * 4)
        self.assertAlmostEqual((four[2] - four[1]) * 2, one[2] - one[1], delta=1e-3)


if __name__ == "__main__":
    unittest.main()
