#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Simulates the sampler's jitter against aliasing (flame/sample/fl_sampler.c).

A workload repeats a loop of period k intervals, the first quarter in a()
and the rest in b(). The sampler fires after periods drawn uniformly from
[0.75, 1.25] x interval (see --spread), keeping each period for a run of
exactly R samples (the first run cut at random), as the perf-event timer does
with PERIOD_EVERY = R; --random-runs draws a new period at one sample in R
at random instead, whose long runs make rare large errors. The estimate of
b's share is the fraction of samples that land in b. Printed per R and k: the estimate's bias and spread
(standard deviation over trials, in points), beside the spread of N
independent samples. Equal spreads for every R mean that runs of equal
periods de-alias as well as a new period for every sample.

  /usr/bin/python3 bench/alias_sim.py [--trials 400] [--spread 0.25]

--tail N estimates how often a profile of N samples is off by more than 4
standard deviations of N independent samples (the bound the tests use; use
--trials 1500 or more), and its largest error.

--spread s draws periods from [1 - s, 1 + s] x interval instead (the
sampler's is 0.25), to see what a narrower jitter would cost.
"""
import argparse

import numpy as np


def estimate(rng, n, run, k, trials, spread, beyond=None, random_runs=False):
    shares = []
    for _ in range(trials):
        if random_runs:
            change = rng.random(n) < 1.0 / run
        else:
            change = (np.arange(n) + rng.integers(run)) % run == 0
        change[0] = True
        drawn = rng.uniform(1 - spread, 1 + spread, n)
        last = np.maximum.accumulate(np.where(change, np.arange(n), 0))
        t = np.cumsum(drawn[last]) + rng.random() * k
        shares.append(np.mean((t % k) / k >= 0.25))
    err = (np.array(shares) - 0.75) * 100
    if beyond is not None:
        return np.mean(np.abs(err) > beyond) * 100, np.abs(err).max()
    return err.mean(), err.std()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--spread", type=float, default=0.25)
    ap.add_argument("--random-runs", action="store_true",
                    help="a new period at one sample in R at random, not every R samples")
    ap.add_argument("--tail", type=int, metavar="N",
                    help="instead: for N samples of loops of 1/4, 1 and 1.02 intervals, the "
                         "share of profiles off by more than 4 binomial standard deviations, "
                         "and the largest error")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.tail:
        bound = 400 * np.sqrt(.75 * .25 / args.tail)
        print(f"{args.tail} samples: 4 standard deviations are {bound:.2f} points")
        for run in (16, 32, 64, 128):
            cells = [estimate(rng, args.tail, run, k, args.trials, args.spread, beyond=bound,
                              random_runs=args.random_runs) for k in (0.25, 1, 1.02)]
            print(f"  run {run:3d}: " + "  ".join(
                f"k={k}: {p:.2f}% beyond, max {m:.2f}" for k, (p, m) in zip((0.25, 1, 1.02), cells)))
        return
    ks = (1 / 3, 0.5, 1, 1.1, 2, 4)
    for n in (1000, 8000):
        print(f"{n} samples: independent samples' spread {np.sqrt(.75 * .25 / n) * 100:.2f} points")
        print("  run R  " + "  ".join(f"{'k=' + format(k, '.2f'):>13s}" for k in ks))
        for run in (1, 32, 128, 256):
            cells = [estimate(rng, n, run, k, args.trials, args.spread,
                              random_runs=args.random_runs) for k in ks]
            print(f"  {run:5d}  " + "  ".join(f"{b:+6.2f}±{s:5.2f}" for b, s in cells))


if __name__ == "__main__":
    main()
