"""test_xsum.py — exact sums from Python (rally.XSum, rally.SUM_EXACT)
against an exact reference: Python's fractions (every double is a
fraction, so their sum is exact; float() of a Fraction rounds once,
correctly) and math.fsum for ten million terms.  Local: no job, except the
last test, which runs workers under rally-run."""
import math
import random
import re
import struct
from fractions import Fraction

import numpy as np
import pytest

import rally
from conftest import run_job


def exact(values):
    return sum((Fraction(v) for v in values), Fraction(0))


def ref64(values):
    """The correctly rounded double sum, IEEE specials and zero signs as
    rally documents them."""
    vals = [float(v) for v in values]
    if any(math.isnan(v) for v in vals) or (math.inf in vals and -math.inf in vals):
        return math.nan
    if math.inf in vals:
        return math.inf
    if -math.inf in vals:
        return -math.inf
    if vals and all(v == 0 and math.copysign(1, v) < 0 for v in vals):
        return -0.0
    q = exact(vals)
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def ref32(values):
    """The same rounded once to binary32 (not via a double)."""
    d = ref64(values)
    if not math.isfinite(d) or d == 0:
        return np.float32(d)
    q = exact(values)
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    ulp = max(e - 23, -149)
    scaled = a / Fraction(2) ** ulp
    n, rest = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rest
    if twice > scaled.denominator or (twice == scaled.denominator and n % 2):
        n += 1
    v = Fraction(n) * Fraction(2) ** ulp
    r = np.float32(np.inf) if v >= Fraction(2) ** 128 else np.float32(float(v))
    return -r if q < 0 else r


def bits64(x):
    return struct.pack("<d", float(x))


def bits32(x):
    return np.float32(x).tobytes()


def kinds(rng, n):
    """Adversarial sets: heavy cancellation, 1e308 with tiny terms,
    subnormals, mixed signs over every exponent."""
    s = lambda: rng.choice((-1.0, 1.0))  # noqa: E731
    big = [1e308 * rng.random() * s() for _ in range(n // 4)]
    yield "cancellation", [x for v in (rng.uniform(-1e6, 1e6) for _ in range(n // 2))
                           for x in (v, -v)] + [2.0 ** -70, -2.0 ** -90]
    yield "1e308 and tiny", big + [-v for v in big] + [1e-300 * rng.random() for _ in range(n)]
    yield "subnormals", [rng.randrange(1, 2 ** 52) * 5e-324 * s() for _ in range(n)]
    yield "mixed signs", [s() * math.ldexp(rng.random(), rng.randrange(-1070, 1020))
                          for _ in range(n)]
    yield "near overflow", [1.7e308, 1.7e308, -1.7e308] + [rng.random() for _ in range(n)]
    yield "overflow", [1.7976931348623157e308] * 3


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_adversarial_sums_are_exactly_rounded(seed):
    rng = random.Random(seed)
    for name, vals in kinds(rng, 2000):
        acc = rally.XSum(1).add(np.array(vals).reshape(-1, 1))
        assert bits64(acc.round()[0]) == bits64(ref64(vals)), name
        assert bits32(acc.round(np.float32)[0]) == bits32(ref32(vals)), name


def test_ten_million_terms():
    rng = np.random.default_rng(7)
    v = rng.standard_normal(10 ** 7) * np.exp2(rng.integers(-60, 60, 10 ** 7))
    v[::2] = -v[1::2] * (1 + 2.0 ** -40)  # cancels to a tiny rest
    acc = rally.XSum(1).add_at(np.zeros(v.size, dtype=np.uint64), v)
    assert bits64(acc.round()[0]) == bits64(math.fsum(v))
    assert bits64(np.sum(v)) != bits64(math.fsum(v))  # a plain sum is not exact here


def test_shuffled_and_regrouped_the_same_bits():
    rng = np.random.default_rng(11)
    cols = 7
    v = rng.standard_normal((3000, cols)) * np.exp2(rng.integers(-300, 300, (3000, cols)))
    whole = rally.XSum(cols).add(v).round()
    want = [ref64(v[:, j]) for j in range(cols)]
    assert whole.tobytes() == b"".join(struct.pack("<d", w) for w in want)
    for _ in range(5):
        p = rng.permutation(len(v))
        cuts = np.sort(rng.integers(0, len(v), rng.integers(1, 9)))
        parts = [rally.XSum(cols).add(g) for g in np.split(v[p], cuts) if len(g)]
        for g in parts[1:]:
            parts[0].merge(g)
        assert parts[0].round().tobytes() == whole.tobytes()
    assert np.sum(v[rng.permutation(len(v))], axis=0).tobytes() != whole.tobytes()


def test_specials_and_zeros():
    cases = [[1.0, math.nan], [math.inf, -math.inf], [math.inf, 5.0], [-math.inf],
             [-0.0, -0.0], [-0.0, 0.0], [2.5, -2.5], [], [1.7976931348623157e308] * 2]
    for vals in cases:
        acc = rally.XSum(1)
        if vals:
            acc.add(np.array(vals).reshape(-1, 1))
        got, want = acc.round()[0], ref64(vals)
        assert bits64(got) == bits64(want) or (math.isnan(got) and math.isnan(want)), vals
    nan = rally.XSum(1).add([math.nan]).round()[0]
    assert bits64(nan) == bytes.fromhex("000000000000f87f")  # the quiet NaN


def test_float32_rows_are_their_values():
    rng = np.random.default_rng(5)
    v = (rng.standard_normal((500, 3)) * np.exp2(rng.integers(-60, 60, (500, 3)))).astype(np.float32)
    a = rally.XSum(3).add(v).round()
    b = rally.XSum(3).add(v.astype(np.float64)).round()
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() == b"".join(struct.pack("<d", ref64(v[:, j].astype(np.float64)))
                                   for j in range(3))


def test_bins_rows_and_refusals():
    acc = rally.XSum(4)
    acc.add(np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.float32))
    acc.add_at([3, 3, 0], [0.5, 0.25, -1])
    assert list(acc.round()) == [5.0, 8.0, 10.0, 12.75]
    acc.add(np.arange(2000.0).reshape(-1, 2), first=1)  # many short rows
    assert list(acc.round()) == [5.0, 8.0 + 999000, 10.0 + 1000000, 12.75]
    acc.clear()
    assert acc.round().tobytes() == bytes(32)
    with pytest.raises(rally.ArgumentError, match="pass the end"):
        acc.add([1.0, 2.0], first=3)
    with pytest.raises(rally.ArgumentError, match="out of range"):
        acc.add_at([4], [1.0])
    with pytest.raises(rally.ArgumentError, match="an XSum of 4"):
        acc.merge(rally.XSum(3))
    with pytest.raises(rally.ArgumentError, match="float32 or float64"):
        acc.round(np.int32)


def test_jobs_give_one_result_at_any_n():
    outs = {}
    for n in (1, 2, 3, 5):
        rc, out = run_job(n, "xsum.py")
        assert rc == 0, out
        outs[n] = re.findall(r"^\[0\] xsum_ok (\w+)$", out, re.M)
        assert len(outs[n]) == 1, out
    assert len(set(o[0] for o in outs.values())) == 1, outs
