// SPDX-License-Identifier: BSD-3-Clause
// What tests read from a cflame flame graph: its SVG (svgOf) and the frames
// of its Vega-Lite spec as rows (framesOf), one object per frame with the
// fields docs/PROFILING.md names ("The data behind the graph").
//
// The spec holds them compactly (flame/draw/fl_vegalite.c): data.values is a CSV
// table of numbers, a line per frame; lookup transforms turn the string
// columns' numbers into strings from datasets.strings, a CSV table of
// "k,s"; x1, pct and depth1 follow from the rest. This reads them the same
// way, by the spec's own transforms (with d3-dsv, vega's CSV reader), and
// check_spec.mjs compares the result with the data vega itself computes.
// tests/lib/cflame_bundle.py and tests/unit/bundle_read.h are the same
// reader in Python and C.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules', 'index.js'));
const { csvParse } = require('d3-dsv');

/* A CSV table's cells as numbers (format.parse "number"), "" as null. */
function numbers(text) {
  return csvParse(text).map(r => Object.fromEntries(
    Object.entries(r).map(([k, v]) => [k, v === '' ? null : Number(v)])));
}

/* A bundle's SVG: its one copy is in the markdown item, inside a <div>
 * (flame/draw/fl_bundle.c). null when there is none. */
export function svgOf(bundle) {
  const md = bundle?.['text/markdown'];
  return (typeof md === 'string' && md.match(/<svg[\s\S]*<\/svg>/)?.[0]) || null;
}

export function framesOf(spec) {
  const data = spec?.data;
  if (typeof data?.values !== 'string' || data.format?.type !== 'csv') return null;
  const rows = numbers(data.values);
  for (const t of spec.transform || []) {
    if (!t.lookup) continue;
    const table = csvParse(spec.datasets[t.from.data.name]);
    const byKey = new Map(table.map(e => [Number(e[t.from.key]), e]));
    for (const row of rows) {
      const e = row[t.lookup] === null ? undefined : byKey.get(row[t.lookup]);
      row[t.as[0]] = e === undefined || e[t.from.fields[0]] === '' ? null : e[t.from.fields[0]];
    }
  }
  const total = rows.length ? rows[0].count : 0;
  for (const row of rows) {
    row.x1 = row.x0 + row.count;
    row.pct = total ? (100 * row.count) / total : 0;
    row.depth1 = row.depth + 1;
  }
  return rows;
}
