"""The matrix product with reference 6.7's zero (dsl/core/ops/contract.py) against its definition:
each term of each sum with a zero factor is 0, the others as numpy multiplies and adds them."""

import numpy as np
import pytest

from dsl.core.ops.contract import nz_matmul, nz_product

SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
          ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((1, 1), (1, 1))]


def by_definition(a, b):
    """Every term of a @ b written out, a zero factor's term 0."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    terms = a2[..., :, :, None] * b2[..., None, :, :]
    zero = (a2 == 0)[..., :, :, None] | (b2 == 0)[..., None, :, :]
    out = np.where(zero, 0.0, terms).sum(axis=-2)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


@pytest.mark.parametrize("sa, sb", SHAPES)
@pytest.mark.parametrize("seed", range(6))
def test_each_term_with_a_zero_factor_is_zero(sa, sb, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    for x in (a, b):
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, size=3)
        flat[picks] = rng.choice([0.0, np.inf, -np.inf, np.nan], size=3)
    with np.errstate(invalid="ignore"):
        want = by_definition(a, b)
        got = nz_matmul(a, b, np.matmul(a, b))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


def test_a_finite_product_is_returned_as_it_is():
    a, b = np.ones((2, 3)), np.ones((3, 2))
    r = a @ b
    assert nz_matmul(a, b, r) is r
    assert nz_product(np.array([0.0, 1.0]), np.array([np.inf, 2.0])) == 2.0
