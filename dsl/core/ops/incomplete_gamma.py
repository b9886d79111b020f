"""The regularized incomplete gamma functions, scipy's gammainc P(a, x) and gammaincc
Q(a, x) = 1 - P(a, x), and the derivative of P in a, vectorised to double precision.

Below x = a + 1, P is the series e^-x x^a / Gamma(a) * sum x^n / (a (a + 1) ... (a + n)); from
there on, Q is Legendre's continued fraction, evaluated by Lentz's method (Numerical Recipes,
6.2). The derivative in a runs the same iterations on dual numbers (each quantity beside its
derivative in a), so it converges with them. Every entry iterates until its own terms stop
changing its sum (its fraction's factors stop changing it), at most MAX_TERMS times: it takes
about 10 sqrt(a) terms near x = a, so a up to about 1e6 converges everywhere and keeps double
precision; an entry that has not converged by then is NaN.
"""

import numpy as np

from .elementwise import _binary_elementwise
from .special import _digamma_vector, _lgamma_vector

MAX_TERMS = 20000
EPS = 1e-17         # a series term this small against the sum changes nothing
STEP = 4e-16        # a fraction's factor this close to 1 changes nothing (its rounding: 2.2e-16)
TINY = 1e-300       # Lentz's stand-in for a zero denominator


def _log1pmx(d):
    """ln(1 + d) - d, its series where the difference would cancel."""
    out = np.log1p(d) - d
    small = np.abs(d) < 0.3
    if small.any():
        v, total, power = d[small], 0.0, d[small]
        for k in range(2, 40):
            power = power * v
            total = total + (power / k if k % 2 else -power / k)
        out[small] = total
    return out


def _front(a, x):
    """(ln(e^-x x^a / Gamma(a)), and its derivative in a, ln x - digamma(a)). From a = 10 on,
    by Stirling's series around x = a: a (ln(1 + d) - d) + ln(a / 2 pi) / 2 - the series' remainder,
    d = (x - a) / a, where the direct form subtracts two logs of size a ln a (1e-10 of error at
    a = 1e5)."""
    with np.errstate(all="ignore"):
        direct = -x + a * np.log(x) - _lgamma_vector(a)
        ddirect = np.log(x) - _digamma_vector(a)
        big = a >= 10.0
        if not big.any():
            return direct, ddirect
        ab, xb = a[big], x[big]
        r = 1.0 / ab
        r2 = r * r
        stirling = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 / 1188))))
        d = (xb - ab) / ab
        direct[big] = ab * _log1pmx(d) + 0.5 * np.log(ab / (2.0 * np.pi)) - stirling
        # ln a - digamma(a), by its asymptotic series
        gap = r * (0.5 + r * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 / 132)))))
        ddirect[big] = np.log1p(d) + gap
    return direct, ddirect


def _series(a, x, log_front, dlog):
    """(P, dP/da) by the series, for x < a + 1 (log_front, dlog: _front's)."""
    term = 1.0 / a
    dterm = -term / a
    total, dtotal = term.copy(), dterm.copy()
    active = np.arange(a.size)
    ap, xa, t, dt = a.copy(), x, term, dterm
    for _ in range(MAX_TERMS):
        ap = ap + 1.0
        t_next = t * xa / ap
        dt = dt * xa / ap - t_next / ap
        t = t_next
        total[active] += t
        dtotal[active] += dt
        going = np.abs(t) > np.abs(total[active]) * EPS
        if not going.all():
            active, ap, xa, t, dt = active[going], ap[going], xa[going], t[going], dt[going]
            if active.size == 0:
                break
    total[active] = dtotal[active] = np.nan       # not converged (a past about 1e7): no number to vouch for
    front = np.exp(log_front)
    return total * front, (dtotal + total * dlog) * front


def _fraction(a, x, log_front, dlog):
    """(Q, dQ/da) by the continued fraction, for x >= a + 1 (log_front, dlog: _front's)."""
    b = x + 1.0 - a
    db = np.full_like(b, -1.0)
    c, dc = np.full_like(b, 1.0 / TINY), np.zeros_like(b)
    d = 1.0 / b
    dd = -db * d * d
    h, dh = d.copy(), dd.copy()
    active = np.arange(a.size)
    aa = a
    for i in range(1, MAX_TERMS):
        an, dan = -i * (i - aa), float(i)
        b = b + 2.0
        den = an * d + b
        dden = dan * d + an * dd + db
        small = np.abs(den) < TINY
        den = np.where(small, TINY, den)
        d = 1.0 / den
        dd = np.where(small, 0.0, -dden * d * d)
        c_next = b + an / c
        dc = db + dan / c - an * dc / (c * c)
        small = np.abs(c_next) < TINY
        c = np.where(small, TINY, c_next)
        dc = np.where(small, 0.0, dc)
        step, dstep = d * c, dd * c + d * dc
        h_next = h[active] * step
        dh[active] = dh[active] * step + h[active] * dstep
        h[active] = h_next
        going = (np.abs(step - 1.0) > STEP) | (np.abs(dstep) > STEP * np.abs(dh[active] / h_next))
        if not going.all():
            active, aa, b, db, c, dc, d, dd = (v[going] if np.ndim(v) else v for v in (active, aa, b, db, c, dc, d, dd))
            if active.size == 0:
                break
    h[active] = dh[active] = np.nan
    front = np.exp(log_front)
    return h * front, (dh + h * dlog) * front


def _both(a, x):
    """(P, Q, dP/da) over arrays broadcast together, with scipy's values at the edges: NaN for a
    negative a or x (or a NaN), P = 0 at x = 0, P = 1 at x = inf or at a = 0 < x."""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    p, q, dp = np.full(a.shape, np.nan), np.full(a.shape, np.nan), np.full(a.shape, np.nan)
    ok = (a >= 0) & (x >= 0) & ~((a == 0) & (x == 0)) & ~(np.isinf(a) & np.isinf(x))
    edge = ok & ((x == 0) | (a == 0) | np.isinf(x) | np.isinf(a))
    p[edge] = np.where((a[edge] == 0) | np.isinf(x[edge]), 1.0, 0.0)
    dp[edge] = 0.0
    inner = ok & ~edge
    with np.errstate(all="ignore"):
        # terms needed, by the series' decay e^-(n |ln(x / a)| + n^2 / 2a) down to e^-40: where even
        # ten times MAX_TERMS would not do (a = 1e10 near x = a) no iteration is tried
        spread = np.abs(np.log(x / a))
        needed = a * (np.sqrt(spread * spread + 80.0 / a) - spread)
        inner &= ~(needed > 10 * MAX_TERMS)
        # where e^-x x^a / Gamma(a), which multiplies the series and the fraction, is below 1e-350
        # (over a's share), the one computed is 0 (its derivative too) and no term is needed: the
        # fraction's denominators underflow before they settle when x is near the largest float
        log_front, dlog = np.full(a.shape, np.nan), np.full(a.shape, np.nan)
        log_front[inner], dlog[inner] = _front(a[inner], x[inner])
        gone = inner & (log_front < -806.0 - np.log(np.maximum(a, 1.0)))
        below = gone & (x < a + 1.0)
        p[below], q[below], dp[gone] = 0.0, 1.0, 0.0
        p[gone & ~below], q[gone & ~below] = 1.0, 0.0
        inner &= ~gone
        low = inner & (x < a + 1.0)
        if low.any():
            p[low], dp[low] = _series(a[low], x[low], log_front[low], dlog[low])
        high = inner & ~low
        if high.any():
            q[high], dq = _fraction(a[high], x[high], log_front[high], dlog[high])
            dp[high] = -dq
    q = np.where(np.isnan(q), 1.0 - p, q)
    p = np.where(np.isnan(p) & ~np.isnan(q) & ok, 1.0 - q, p)
    # probabilities, where a tiny a's rounding (the series' 1/a times a prefactor near a) passes 1
    p, q = np.clip(p, 0.0, 1.0), np.clip(q, 0.0, 1.0)
    return p.reshape(shape), q.reshape(shape), dp.reshape(shape)


def _typed(k):
    """The kernel of result k of _both, in the float type of its arguments (numpy 2's promotion:
    float32 stays float32), computed in float64; a number of numbers."""
    def kernel(a, x):
        kind = np.result_type(a, x)
        out = _both(a, x)[k]
        return (out.astype(kind) if kind in (np.float32, np.float16) else out)[()]
    return kernel


_lower, _upper, _lower_da = _typed(0), _typed(1), _typed(2)      # P, Q = 1 - P, and dP/da = -dQ/da


gammainc = _binary_elementwise("Gammainc", "gammainc", _lower)
gammaincc = _binary_elementwise("Gammaincc", "gammaincc", _upper)
gammainc_da = _binary_elementwise("GammaincDa", "gammainc_da", _lower_da)
