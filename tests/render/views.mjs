// SPDX-License-Identifier: BSD-3-Clause
// What check_spec.mjs and browser_test.mjs know about the views other than
// the flame graph: which view a spec draws (usermeta.cflame.view), its rows
// and what they must show.
//
// view=top (flame/view/fl_top.c): the data rows are {func, file, module, symbol,
// self, total, color}; the spec ranks them by the param `sort` ("self" or
// "total"; ties by the other, then by name) and keeps the first 50; sumpct
// runs over the self shares in that order.

export const TOP_ROWS = 50;

/* "flame" (the flame and callers graphs, and diffs) or the view's name. */
export function viewOf(spec) {
  return spec?.usermeta?.cflame?.view ?? 'flame';
}

/* The data rows of a top spec. */
export function topRows(spec) {
  return spec.layer?.[0]?.data?.values ?? [];
}

/* The rows a top spec must draw when sorted by `sort`, in order, each with
 * its rank and the shares the spec computes. */
export function expectedTop(spec, sort) {
  const total = spec.usermeta.cflame.total || 1;
  const other = sort === 'total' ? 'self' : 'total';
  const rows = [...topRows(spec)].sort((a, b) =>
    b[sort] - a[sort] || b[other] - a[other] || (a.func < b.func ? -1 : a.func > b.func ? 1 : 0));
  let running = 0;
  return rows.slice(0, TOP_ROWS).map((r, i) => {
    running += r.self;
    return { ...r, rank: i + 1, selfpct: 100 * r.self / total, totalpct: 100 * r.total / total,
             sumpct: 100 * running / total };
  });
}

/* What is wrong with a top spec's rows, or null. */
export function topRowsProblem(spec) {
  const rows = topRows(spec);
  if (!Array.isArray(rows) || rows.length === 0) return 'no rows';
  if (rows.length > 2 * TOP_ROWS) return `${rows.length} rows, more than ${2 * TOP_ROWS}`;
  for (const r of rows) {
    if (typeof r.func !== 'string' || !Number.isInteger(r.self) || !Number.isInteger(r.total) ||
        r.self < 0 || r.self > r.total || !/^#[0-9a-f]{6}$/.test(r.color)) {
      return `bad row ${JSON.stringify(r)}`;
    }
  }
  const total = spec.usermeta?.cflame?.total;
  if (!Number.isInteger(total) || rows.some(r => r.total > total)) return `bad total ${total}`;
  return null;
}

/* What is wrong with the drawn rows of a top view (the data of its self
 * bars, as vega computed them) against expectedTop, or null. */
export function topDrawnProblem(spec, drawn, sort) {
  const want = expectedTop(spec, sort);
  const got = [...drawn].sort((a, b) => a.rank - b.rank);
  if (got.length !== want.length) return `sort=${sort}: ${got.length} rows drawn, not ${want.length}`;
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (g.rank !== w.rank || g.func !== w.func) {
      return `sort=${sort}: rank ${w.rank} is ${g.func}, not ${w.func}`;
    }
    for (const k of ['selfpct', 'totalpct', 'sumpct']) {
      if (Math.abs(g[k] - w[k]) > 1e-9) return `sort=${sort}: ${w.func}'s ${k} is ${g[k]}, not ${w[k]}`;
    }
  }
  return null;
}

// view=source (flame/view/fl_source.c): rows {i, k, file, line, text, self,
// total} in order: a "file" row, then its "line" and "gap" rows.

/* The data rows of a source spec. */
export function sourceRows(spec) {
  return spec.layer?.[0]?.data?.values ?? [];
}

/* What is wrong with a source spec's rows, or null. */
export function sourceRowsProblem(spec) {
  const rows = sourceRows(spec);
  const total = spec.usermeta?.cflame?.total;
  if (!Number.isInteger(total)) return `bad total ${total}`;
  let file = null, last = 0;
  for (const [i, r] of rows.entries()) {
    if (r.i !== i) return `row ${i} has i ${r.i}`;
    if (!['file', 'line', 'gap'].includes(r.k)) return `row ${i} has kind ${r.k}`;
    if (!Number.isInteger(r.self) || !Number.isInteger(r.total) || r.total > total) {
      return `row ${i} has self ${r.self}, total ${r.total}`;
    }
    if (r.k === 'file') {
      file = r.file;
      last = 0;
      continue;
    }
    if (r.file !== file) return `row ${i} of ${r.file} is under ${file}`;
    if (r.k === 'line') {
      if (!(r.line > last) || typeof r.text !== 'string' || r.self > r.total) {
        return `line row ${i}: ${JSON.stringify(r)}`;
      }
      last = r.line;
    }
  }
  return null;
}

// view=source of a diff (flame/view/fl_source_diff.c, usermeta.cflame.diff):
// rows {i, k ("file", "line", "gap" or "removed"), file, line, ln, text,
// self, total, base_self, base_total, delta, deltas, xs, ys, change ("" for
// a line without weight), color}.

/* The rows of a source diff with weight in either profile. */
export function changedLines(spec) {
  return sourceRows(spec).filter(r => (r.k === 'line' || r.k === 'removed') && r.change !== '');
}

/* What is wrong with a source diff's rows, or null. */
export function sourceDiffProblem(spec) {
  const rows = sourceRows(spec), meta = spec.usermeta?.cflame ?? {};
  let file = null, last = 0, removed = 0;
  for (const [i, r] of rows.entries()) {
    if (r.i !== i) return `row ${i} has i ${r.i}`;
    if (!['file', 'line', 'gap', 'removed'].includes(r.k)) return `row ${i} has kind ${r.k}`;
    if (r.k === 'file') {
      file = r.file;
      last = 0;
      continue;
    }
    if (r.file !== file) return `row ${i} of ${r.file} is under ${file}`;
    if (r.k === 'gap') continue;
    if (r.k === 'removed') removed++;
    if (r.k === 'line') {
      if (!(r.line > last)) return `line ${r.line} after ${last}`;
      last = r.line;
    }
    const weighs = r.total > 0 || r.base_total > 0;
    if (weighs !== (r.change !== '')) return `line ${r.ln}: change "${r.change}" with ${JSON.stringify(r)}`;
    if ((r.change === 'grew' && !(r.delta > 0)) || (r.change === 'shrank' && !(r.delta < 0)) ||
        (r.change === 'new' && (r.base_total !== 0 || !(r.delta > 0)))) {
      return `line ${r.ln} ${r.change} with delta ${r.delta}`;
    }
    if (r.k === 'removed' && (r.total !== 0 || !r.ln.startsWith('was '))) return `removed row ${JSON.stringify(r)}`;
  }
  if (removed !== meta.removed) return `${removed} removed rows, usermeta says ${meta.removed}`;
  return null;
}

/* The line rows of a source spec with samples, the hottest first. */
export function hotLines(spec) {
  return sourceRows(spec).filter(r => r.k === 'line' && r.total > 0)
    .sort((a, b) => b.self - a.self || b.total - a.total);
}

// view=chart (flame/view/fl_chart.c): bar rows {f, fi, m, th, co (indexes into
// datasets.strings), d (depth), t0, t1 (seconds), n (count)}; the spec makes
// each bar's top from its depth and its lane's (datasets.lanetops, by th).

/* The bars of a chart spec, their strings read: {func, file, module,
 * thread, color, depth, t0, t1, count}. */
export function chartBars(spec) {
  const strings = new Map((spec.datasets?.strings ?? []).map(r => [r.k, r.s]));
  return (spec.layer?.[0]?.data?.values ?? []).map(r => ({
    func: strings.get(r.f), file: strings.get(r.fi), module: strings.get(r.m),
    thread: strings.get(r.th), color: strings.get(r.co),
    depth: r.d, t0: r.t0, t1: r.t1, count: r.n,
  }));
}

/* What is wrong with a chart's bars, or null: each within [from, to] with
 * t0 <= t1 (samples with one time stamp make a bar of no width), inside the bar above it in its lane (a bar is never wider than
 * its caller's), and each lane's top bars adding up to its samples. */
export function chartProblem(spec) {
  const bars = chartBars(spec), meta = spec.usermeta?.cflame ?? {};
  if (bars.length === 0) return 'no bars';
  for (const b of bars) {
    if (typeof b.func !== 'string' || typeof b.thread !== 'string' || !/^#[0-9a-f]{6}$/.test(b.color)) {
      return `bar with unknown strings: ${JSON.stringify(b)}`;
    }
    if (!(b.t0 <= b.t1) || b.t0 < meta.from - 1e-6 || b.t1 > meta.to + 1e-6) {
      return `bar ${b.func} from ${b.t0} to ${b.t1}, outside ${meta.from}..${meta.to}`;
    }
    if (b.depth > 1 && !bars.some(p => p.thread === b.thread && p.depth === b.depth - 1 &&
                                       p.t0 <= b.t0 + 1e-6 && p.t1 >= b.t1 - 1e-6)) {
      return `bar ${b.func} (${b.thread}, depth ${b.depth}, ${b.t0}..${b.t1}) has no bar above it`;
    }
  }
  const top = bars.filter(b => b.depth === 1).reduce((s, b) => s + b.count, 0);
  if (top !== meta.total) return `the top bars hold ${top} samples, not ${meta.total}`;
  return null;
}

// view=top of a diff (flame/view/fl_top_diff.c, usermeta.cflame.diff): rows
// {rank, func, file, module, self, total, base_self, base_total, delta,
// change, color}, by |delta|.

/* What is wrong with a diff top's rows, or null. */
export function topDiffProblem(spec) {
  const rows = topRows(spec);
  if (rows.length === 0 || rows.length > TOP_ROWS) return `${rows.length} rows`;
  for (const [i, r] of rows.entries()) {
    if (r.rank !== i + 1) return `row ${i} has rank ${r.rank}`;
    if (!['grew', 'shrank', 'same', 'new', 'vanished'].includes(r.change)) return `${r.func}: change ${r.change}`;
    if ((r.change === 'grew' && !(r.delta > 0)) || (r.change === 'shrank' && !(r.delta < 0)) ||
        (r.change === 'new' && r.delta < 0) || (r.change === 'vanished' && r.delta > 0)) {
      return `${r.func} ${r.change} with delta ${r.delta}`;
    }
    if (i > 0 && Math.abs(r.delta) > Math.abs(rows[i - 1].delta) + 1e-9) {
      return `${r.func} (delta ${r.delta}) comes after ${rows[i - 1].func} (${rows[i - 1].delta})`;
    }
  }
  return null;
}

// view=sandwich (flame/view/fl_sandwich.c): two flame specs in a vconcat, the
// callers' (a flame graph) above the callees' (an icicle), their names
// suffixed _callers and _callees, their string tables in the top-level
// datasets.

/* The two halves as flame specs that frames.mjs reads. */
export function sandwichHalves(spec) {
  return (spec.vconcat ?? []).map(part => ({ ...part, datasets: spec.datasets }));
}
