"""The derivative of a gamma draw with respect to its shape parameter a: implicit
reparameterisation (Figurnov, Mohamed and Mnih 2018; JAX's `random_gamma_grad`).

A draw x of Gamma(a, 1) is F^-1(u; a) for a uniform u, F(x; a) = P(a, x) the regularised lower
incomplete gamma function. Holding u fixed, dx/da = -(dP/da) / p(x; a), p = dP/dx the density;
its own derivatives follow from P's second derivative in a (`gamma_draw_grad2`):

    d/da G = -K - G (ln x - psi(a)),   d/dx G = -(ln x - psi(a)) - G ((a - 1) / x - 1)

with G = dx/da and K = (d^2 P / da^2) / p. P and its derivatives in a come from Cephes' igam
series where x <= 1 or x <= a, else from its continued fraction for 1 - P, each term carried
with its first and second derivatives in a (forward mode by hand), as XLA's igamma does.
"""

import math

import numpy as np

from .elementwise import _binary_elementwise
from .special import _digamma_vector, _polygamma_vector

_EPS = 1e-15
A_MAX = 3.8e6       # beyond, the derivatives are nan (their sums would need more than 100,000 terms)


def _terms(a):
    """How many terms to sum at most: near x = a the series and the fraction need about 10 sqrt(a)
    (measured: 190 at a = 200, 2,900 at a = 1e5), up to 100,000 for a up to A_MAX; an entry that
    has not converged by then (an x near the largest float) is left as it is."""
    return 2000 + int(50.0 * math.sqrt(float(np.max(a, initial=1.0))))


def _series(a, x):
    """(S, S', S'') where P(a, x) = x^a e^-x / Gamma(a + 1) * S, S = sum_n prod_k x / (a + k)."""
    t, s = np.ones(a.shape), np.ones(a.shape)
    ds, dds = np.zeros(a.shape), np.zeros(a.shape)
    h, h2 = np.zeros(a.shape), np.zeros(a.shape)     # sum_k 1 / (a + k) and sum_k 1 / (a + k)^2
    for n in range(1, _terms(a)):
        t = t * x / (a + n)
        h, h2 = h + 1.0 / (a + n), h2 + 1.0 / (a + n) ** 2
        s, ds, dds = s + t, ds - t * h, dds + t * (h * h + h2)
        if not np.any(t * (1.0 + h * h + h2) > 1e-17 * s):     # converged, or not a number
            break
    return s, ds, dds


def _fraction(a, x):
    """(C, C', C'') where 1 - P(a, x) = x^a e^-x / Gamma(a) * C (Cephes' igamc fraction)."""
    y, z, c = 1.0 - a, x + 2.0 - a, 0.0
    zero = np.zeros(a.shape)
    p2, q2, p1, q1 = np.ones(a.shape), x.copy(), x + 1.0, z * x     # the convergents' terms
    dp2, dq2, dp1, dq1 = zero, zero, zero, -x                        # their derivatives in a
    ddp2, ddq2, ddp1, ddq1 = zero, zero, zero, zero
    r, dr, ddr = p1 / q1, (dp1 - p1 / q1 * dq1) / q1, zero
    ddr = (ddp1 - 2.0 * dr * dq1 - r * ddq1) / q1
    active = np.ones(a.shape, dtype=bool)
    for _ in range(_terms(a)):
        c += 1.0
        y, z = y + 1.0, z + 2.0
        yc = y * c      # d/da y = d/da z = -1
        p, q = p1 * z - p2 * yc, q1 * z - q2 * yc
        dp, dq = dp1 * z - p1 - dp2 * yc + p2 * c, dq1 * z - q1 - dq2 * yc + q2 * c
        ddp = ddp1 * z - 2.0 * dp1 - ddp2 * yc + 2.0 * c * dp2
        ddq = ddq1 * z - 2.0 * dq1 - ddq2 * yc + 2.0 * c * dq2
        rn = p / q
        drn = (dp - rn * dq) / q
        ddrn = (ddp - 2.0 * drn * dq - rn * ddq) / q
        # each entry stops once it converged, each derivative to within _EPS of the terms it is
        # added to (their own relative rounding does not fall that low): further steps only add rounding
        scale = np.abs(rn) + np.abs(drn)
        active &= ~((np.abs(rn - r) <= _EPS * np.abs(rn)) & (np.abs(drn - dr) <= _EPS * scale)
                    & (np.abs(ddrn - ddr) <= _EPS * (scale + np.abs(ddrn)))) & np.isfinite(ddrn)
        r, dr, ddr = np.where(active, rn, r), np.where(active, drn, dr), np.where(active, ddrn, ddr)
        p2, p1, q2, q1, dp2, dp1, dq2, dq1 = p1, p, q1, q, dp1, dp, dq1, dq
        ddp2, ddp1, ddq2, ddq1 = ddp1, ddp, ddq1, ddq
        big = np.abs(p) > 2.0 ** 500
        if big.any():       # the convergents grow: rescale them (their ratios stay)
            sc = np.where(big, 2.0 ** -500, 1.0)
            p2, p1, q2, q1, dp2, dp1, dq2, dq1 = (v * sc for v in (p2, p1, q2, q1, dp2, dp1, dq2, dq1))
            ddp2, ddp1, ddq2, ddq1 = (v * sc for v in (ddp2, ddp1, ddq2, ddq1))
        if not active.any():
            break
    return r, dr, ddr


def _derivatives(a, x):
    """(G, K) over arrays: G = dx/da of a Gamma(a, 1) draw x, K = (d^2 P / da^2) / p (module
    docstring); 0 where x is 0 (a draw that underflowed), nan outside a > 0, x >= 0."""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))
    g, k = np.zeros(a.shape), np.zeros(a.shape)
    with np.errstate(all="ignore"):
        inside = (x > 0) & (a > 0) & (a <= A_MAX) & np.isfinite(x)
        cf = inside & (x > 1.0) & (x > a)
        ser = inside & ~cf
        if ser.any():       # P = f S, f = x^a e^-x / Gamma(a + 1), p = f a / x, f' = f L
            aa, xx = a[ser], x[ser]
            s, ds, dds = _series(aa, xx)
            lx = np.log(xx) - _digamma_vector(aa + 1.0)
            g[ser] = -(xx / aa) * (lx * s + ds)
            k[ser] = (xx / aa) * ((lx * lx - _polygamma_vector(1, aa + 1.0)) * s + 2.0 * lx * ds + dds)
        if cf.any():        # 1 - P = f C, f = x^a e^-x / Gamma(a), p = f / x, f' = f M
            aa, xx = a[cf], x[cf]
            c, dc, ddc = _fraction(aa, xx)
            mx = np.log(xx) - _digamma_vector(aa)
            g[cf] = xx * (mx * c + dc)
            k[cf] = -xx * ((mx * mx - _polygamma_vector(1, aa)) * c + 2.0 * mx * dc + ddc)
    bad = ~((a > 0) & (a <= A_MAX) & (x >= 0))
    return np.where(bad, np.nan, g), np.where(bad, np.nan, k)


def _reparameterised(a, x):
    """The draw x itself, broadcast with a ([()]: a number of numbers, as a ufunc gives)."""
    return np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))[1].copy()[()]


# gamma_draw(a, x): x, whose derivative in a is gamma_draw_grad(a, x); x is the draw made with a
# held constant (dsl/runtime/builtins/random.py)
gamma_draw = _binary_elementwise("GammaDraw", "gamma_draw", _reparameterised)
gamma_draw_grad = _binary_elementwise("GammaDrawGrad", "gamma_draw_grad", lambda a, x: _derivatives(a, x)[0][()])
gamma_draw_grad2 = _binary_elementwise("GammaDrawGrad2", "gamma_draw_grad2", lambda a, x: _derivatives(a, x)[1][()])
