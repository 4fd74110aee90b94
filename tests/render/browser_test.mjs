// SPDX-License-Identifier: BSD-3-Clause
// Drives a cflame flame graph in a real browser, as a JupyterLab user would.
//
//   node tests/render/browser_test.mjs [--screenshot PNG] FILE_OR_DIR...
//
// Each FILE is a Vega-Lite spec or a MIME bundle (see check_spec.mjs); a DIR
// stands for the *.json files in it. The page loads vega, vega-lite and
// vega-embed from node_modules (or from $VEGA_MODULES, another node_modules
// directory, to try the versions a given JupyterLab ships) and embeds the
// spec with vegaEmbed, as JupyterLab's renderer does; Debian's Chromium
// (/usr/bin/chromium, or $CHROMIUM) runs it headless, with a fresh profile
// and no network. For each file the test asserts:
//   - nothing is logged to the console as a warning or error;
//   - typing in the search box dims the frames that do not match, outlines
//     the ones that do, and shows the matched share, which equals the sum of
//     the counts of matching frames with no matching ancestor over the root's;
//   - hovering a frame shows a tooltip with function, file:line and module
//     (as far as the frame has them), samples, self and percent;
//   - clicking a frame zooms the x domain to its [x0, x1], double-clicking
//     resets it to the whole run;
//   - the wheel zooms and a drag pans the x domain (and a drag is not taken
//     for a click);
//   - labels are drawn only inside their frame;
//   - a graph deeper than its height: a click on its band opens it, the
//     levels laid out from the clicked frame's, and a double-click closes
//     it (checkBandPage);
//   - merged frames (a parent's narrow frames): hovering the widest shows
//     its name, weight and the widest frames it holds, and a click on its
//     parent zooms in with the merged frame still drawn (checkMergedPage);
//   - for a bundle, the SVG parses as XML in the browser, with one titled
//     path (a frame) per row.
// For a differential flame graph (rows with a change field), also:
//   - hovering the widest frame of each change (grew, shrank, same, new) shows
//     the drawn profile's count and percent ("target", or "baseline" when
//     negated), the other's count and percent of its total (or what a new
//     frame shows instead), the signed delta with its share of the drawn
//     profile ("of the target"), and the change as the legend names it;
//   - every frame is drawn in its row's colour;
//   - the legend sits under the plot and its axis, and the vanished list,
//     when there is one, under the legend: none of them overlap, and the
//     list lies inside the embedded view;
//   - search, click-zoom, wheel zoom and drag-pan behave as for any graph.
// For a top view (views.mjs), instead:
//   - the rows drawn sorted by self are the first 50 by self, in order, with
//     their shares;
//   - hovering the first row's self bar shows its function, self and total;
//   - choosing "total" in the sort buttons re-ranks the rows by total;
//   - for a bundle, the SVG parses, with one titled row per table line.
// For a source view: two bars per line drawn, hovering the hottest line's
// bar shows its file:line, self and total, and a bundle's SVG parses with
// one titled bar per line with samples.
// For a chart: a rect per bar, hovering the longest bar shows its
// function, thread and time, the wheel zooms the time axis around the
// pointer, a drag pans it, and a double-click resets it.
// --screenshot PNG saves what the page shows (PNG-N.png for several files).
// Exits 0 when every file passes; otherwise prints what failed and exits 1.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { framesOf, svgOf } from './frames.mjs';
import { viewOf, expectedTop, topDrawnProblem, sourceRows, hotLines, changedLines, chartBars,
         topRows, sandwichHalves } from './views.mjs';

/* How long a wait for the page may take. Generous: a loaded machine can make
 * Chromium slow, and a wait ends as soon as its condition holds, so a
 * passing run never pays for it. */
const WAIT_MS = 60_000;

const here = path.dirname(fileURLToPath(import.meta.url));
const VL_MIME = 'application/vnd.vegalite.v5+json';

// $VEGA_MODULES: another node_modules with vega, vega-lite and vega-embed,
// to try the spec with the versions a given JupyterLab ships.
const modules = process.env.VEGA_MODULES || path.join(here, 'node_modules');

function lib(rel) {
  return fs.readFileSync(path.join(modules, rel), 'utf8');
}

// The libraries are inlined, so the page needs no server and no network.
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>cflame flame graph</title>
<script>${lib('vega/build/vega.min.js')}</script>
<script>${lib('vega-lite/build/vega-lite.min.js')}</script>
<script>${lib('vega-embed/build/vega-embed.min.js')}</script>
</head><body style="margin: 10px"><div id="vis"></div></body></html>`;

class Failure extends Error {}

function check(cond, what) {
  if (!cond) throw new Failure(what);
}

/* The matched share the page should show, computed here from the rows. */
function expectedShare(rows, text) {
  const needle = text.toLowerCase();
  const byId = new Map(rows.map(r => [r.id, r]));
  const matches = r => r.func.toLowerCase().includes(needle);
  let sum = 0;
  for (const r of rows) {
    if (!matches(r)) continue;
    let p = byId.get(r.parent);
    while (p && !matches(p)) p = byId.get(p.parent);
    if (!p) sum += r.count;
  }
  return (100 * sum) / rows[0].count;
}

/* d3-format's '.Nr' trimmed ('~'): N significant digits, no trailing zeros;
 * d3 writes negative numbers with U+2212. */
function sig(v, digits, sign) {
  const s = String(parseFloat(Math.abs(v).toPrecision(digits)));
  return (v < 0 ? '\u2212' : sign ? '+' : '') + s;
}

/* d3-format's ',.2~f' (and '+,.2~f' with sign). */
function amount(v, sign) {
  const s = Math.abs(v).toLocaleString('en-US', { maximumFractionDigits: 2 });
  return (v < 0 && s !== '0' ? '\u2212' : sign ? '+' : '') + s;
}

/* What the tooltip of a diff's row must say, as [key, value] pairs. */
function diffTooltip(spec, row, unit) {
  const meta = spec.usermeta.cflame.diff;
  const total = framesOf(spec)[0].count;
  const drawn = meta.negate ? 'baseline' : 'target', other = meta.negate ? 'target' : 'baseline';
  const legend = spec.layer.find(l => l.name === 'legend').encoding.color.scale.domain;
  const want = [
    [drawn, `${row.count.toLocaleString('en-US')} ${unit} (${sig(row.pct, 4)}%)`],
    ['delta', `${amount(row.delta, true)} ${meta.delta === 'self' ? 'self ' : ''}${unit} ` +
              `(${sig((100 * row.delta) / total, 3, true)}% of the ${drawn})`],
    ['change', legend[['grew', 'shrank', 'same', 'new'].indexOf(row.change)]],
  ];
  if (row.base === null) {
    want.push([other, meta.negate ? 'none (only in the baseline)' : 'new']);
  } else {
    const pct = meta.other_total > 0 ? ` (${sig((100 * row.base) / meta.other_total, 4)}%)` : '';
    want.push([other, `${amount(row.base)} ${unit}${pct}`]);
  }
  return want;
}

/* Page-side helpers, installed once the view exists. */
function installHelpers() {
  window.cf = {
    domain: () => window.view.scale('x').domain(),
    // Every item of a mark type in the scenegraph, with its datum.
    items(marktype) {
      const out = [];
      (function walk(node) {
        if (!node) return;
        if (node.marktype === marktype && node.items && node.role === 'mark') out.push(...node.items);
        for (const it of node.items || []) walk(it);
      })(window.view.scenegraph().root);
      return out;
    },
    frameItems() {
      return cf.items('rect').filter(it => it.datum && it.datum.x1 !== undefined && !cf.isBand(it));
    },
    bandItems() {
      return cf.items('rect').filter(it => it.datum && it.datum.x1 !== undefined && cf.isBand(it));
    },
    isBand: it => /^band/.test(it.mark?.name || ''),
    yDomain: () => window.view.scale('y').domain(),
    labelItems() {
      return cf.items('text').filter(it => it.datum && it.datum.x1 !== undefined);
    },
    texts() {
      return cf.items('text').map(it => String(it.text || ''));
    },
    // Client coordinates of the middle of the visible part of a frame,
    // scrolled into the window first (deep graphs are taller than it).
    pointOf(row) {
      const v = window.view;
      const canvas = v.container().querySelector('canvas, svg');
      // The plot's offset in the canvas: the view's padding, then its origin.
      const pad = v.padding();
      const [ox, oy] = v.origin();
      const sx = v.scale('x'), sy = v.scale('y');
      const [d0, d1] = sx.domain();
      const a = Math.max(row.x0, d0), b = Math.min(row.x1, d1);
      const at = () => {
        const box = canvas.getBoundingClientRect();
        return {
          x: box.left + (pad.left || 0) + ox + sx((a + b) / 2),
          y: box.top + (pad.top || 0) + oy + sy(row.depth + 0.5),
        };
      };
      const p = at();
      if (p.y < 50 || p.y > window.innerHeight - 50) window.scrollBy(0, p.y - window.innerHeight / 2);
      return at();
    },
  };
}

async function waitDomain(page, pred, what) {
  try {
    await page.waitForFunction(pred, null, { timeout: WAIT_MS });
  } catch {
    const d = await page.evaluate(() => cf.domain());
    throw new Failure(`${what}: x domain is ${JSON.stringify(d)}`);
  }
}

/* A frame to click: the widest below the root that is not the whole run. */
function pickFrame(rows) {
  const total = rows[0].count;
  const cands = rows.filter(r => r.depth >= 1 && r.count < total).sort((a, b) => b.count - a.count);
  return cands[0] || rows[0];
}

/* A graph with merged frames (status bit 4: a parent's narrow frames):
 * hovering the widest shows its name, weight and the widest frames it
 * holds; a click on its parent zooms to the parent and the merged frame is
 * still drawn, within the parent's range; a double-click resets. */
async function checkMergedPage(page, spec, rows) {
  const merged = rows.filter(r => r.status & 4).sort((a, b) => b.count - a.count);
  // A plain graph whose notes say narrow frames were hidden or merged draws
  // them merged (a diff's are not merged yet); frames left out to stay
  // within the rows are another matter.
  const said = /narrow frames? (hidden|merged)/.test(JSON.stringify(spec.title || ''));
  check(!said || merged.length > 0 || rows[0].change !== undefined,
        `the notes say narrow frames were hidden, and none is drawn merged: ${JSON.stringify(spec.title)}`);
  if (!merged.length) return '';
  const m = merged[0], parent = rows.find(r => r.id === m.parent);
  check(parent && m.x0 >= parent.x0 && m.x1 <= parent.x1 - parent.self,
        `merged frame ${m.func} [${m.x0}, ${m.x1}) lies outside its parent's children`);
  check(typeof m.held === 'string' && m.held.length > 0, `merged frame ${m.func} holds nothing`);
  const hover = async () => {
    const pt = await page.evaluate(r => cf.pointOf(r), m);
    await page.mouse.move(pt.x + 1, pt.y);
    await page.mouse.move(pt.x, pt.y);
    const tip = page.locator('#vg-tooltip-element');
    await tip.waitFor({ state: 'visible', timeout: WAIT_MS });
    const text = await tip.innerText();
    for (const want of [m.func, m.count.toLocaleString('en-US'), 'the widest', m.held.split('; ')[0]])
      check(text.includes(want), `merged frame's tooltip lacks "${want}": ${JSON.stringify(text)}`);
  };
  await hover();
  const pp = await page.evaluate(r => cf.pointOf(r), parent);
  await page.mouse.click(pp.x, pp.y);
  await waitDomain(page, `cf.domain()[0] === ${parent.x0} && cf.domain()[1] === ${parent.x1}`,
                   `after clicking ${parent.func}, the merged frame's parent`);
  const kept = await page.evaluate(id => cf.frameItems().some(it => it.datum.id === id && it.width > 0), m.id);
  check(kept, `zoomed into ${parent.func}, its merged frame is not drawn`);
  await hover();
  await page.mouse.dblclick(pp.x, pp.y);
  await waitDomain(page, `cf.domain()[0] === 0 && cf.domain()[1] === ${rows[0].count}`,
                   'after double-click from the merged frame\'s parent');
  return `; merged frame "${m.func}" hovered, kept in its parent's zoom`;
}

/* A graph deeper than its height (usermeta.cflame: levels, shown): a click
 * on the widest piece of its band opens it, the frame drawn and labelled at
 * the plot's lowest level and the levels laid out from its own, the rest a
 * band again that says how many levels it holds; a double-click closes it.
 * Returns a note for the log. */
async function checkBandPage(page, spec, rows) {
  const meta = spec.usermeta?.cflame || {};
  if (!(meta.shown < meta.levels)) return '';
  const cut = meta.shown - 1;
  const piece = rows.filter(r => r.depth === cut && r.deep > r.depth).sort((a, b) => b.count - a.count)[0];
  const drawn = await page.evaluate(id => cf.bandItems().some(it => it.datum.id === id), piece.id);
  check(drawn, `the band has no piece over ${piece.func}`);
  const pt = await page.evaluate(r => cf.pointOf(r), piece);
  await page.mouse.click(pt.x, pt.y);
  try {
    await page.waitForFunction(([a, b]) => cf.yDomain()[0] === a && cf.yDomain()[1] === b,
                               [piece.depth, piece.depth + meta.shown], { timeout: WAIT_MS });
  } catch {
    throw new Failure(`clicking the band over ${piece.func} (depth ${piece.depth}) does not open it: ` +
                      `y domain ${JSON.stringify(await page.evaluate(() => cf.yDomain()))}`);
  }
  const seen = await page.evaluate(id => ({
    frame: cf.frameItems().some(it => it.datum.id === id),
    label: cf.labelItems().filter(it => it.datum.id === id && !cf.isBand(it)).map(it => it.text)[0],
    words: cf.items('text').filter(it => it.datum && /^band/.test(it.mark?.name || '')).map(it => String(it.text)),
    depths: [...new Set(cf.frameItems().map(it => it.datum.depth))].length,
  }), piece.id);
  check(seen.frame && seen.label === piece.label, `opened, ${piece.func} is drawn ${seen.frame}, labelled ${seen.label}`);
  check(seen.depths >= Math.min(cut, piece.deep - piece.depth), `opened, ${seen.depths} levels drawn`);
  const left = piece.deep - (piece.depth + cut) + 1;
  if (left > 0) {
    const words = `\u2026 ${left.toLocaleString('en-US')} more levels`;
    check(seen.words.some(w => w.startsWith(words)), `opened, the band says ${JSON.stringify(seen.words.slice(0, 3))}, not ${words}`);
  }
  await page.mouse.dblclick(pt.x, pt.y);
  await page.waitForFunction(b => cf.yDomain()[0] === 0 && cf.yDomain()[1] === b, meta.shown, { timeout: WAIT_MS });
  return `; band over ${piece.func} opened`;
}

/* A diff's tooltips, colours and layout in the page; returns a note for
 * the log. */
async function checkDiffPage(page, spec, rows, unit) {
  // Tooltips: the widest frame of each change, where it is wide enough to
  // point at.
  const tip = page.locator('#vg-tooltip-element');
  const hovered = [];
  for (const change of ['grew', 'shrank', 'same', 'new']) {
    const row = rows.filter(r => r.change === change && r.depth > 0).sort((a, b) => b.count - a.count)[0];
    if (!row || row.count < rows[0].count / 200) continue;
    const pt = await page.evaluate(r => cf.pointOf(r), row);
    await page.mouse.move(pt.x, pt.y);
    let text = '';
    try {
      await page.waitForFunction(f => {
        const el = document.getElementById('vg-tooltip-element');
        return el && el.classList.contains('visible') && el.innerText.includes(f);
      }, row.func, { timeout: WAIT_MS });
      text = await tip.innerText();
    } catch {
      text = await tip.innerText().catch(() => '');
    }
    // Older vega-tooltip writes "key:" where newer writes "key".
    for (const [key, value] of diffTooltip(spec, row, unit)) {
      const line = new RegExp(`(^|\\n)${key}:?\\s*\\n?\\s*${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\n|$)`);
      check(line.test(text), `tooltip of ${change} frame ${row.func} lacks ${key}: ${value}: ${JSON.stringify(text)}`);
    }
    hovered.push(change);
  }
  check(hovered.length > 0, 'no diff frame wide enough to hover');

  // Colours as drawn.
  const wrong = await page.evaluate(() => cf.frameItems().filter(it => it.fill !== it.datum.color).length);
  check(wrong === 0, `${wrong} frames not drawn in their row's colour`);

  // Layout: plot (and axis), then the legend, then the vanished list, all
  // inside the view.
  const box = await page.evaluate(() => {
    const v = window.view;
    const union = items => items.reduce((b, it) => it.bounds ? {
      y1: Math.min(b.y1, it.bounds.y1), y2: Math.max(b.y2, it.bounds.y2),
    } : b, { y1: Infinity, y2: -Infinity });
    const legends = [], axes = [];
    (function walk(node) {
      if (!node) return;
      if (node.role === 'legend') legends.push(...node.items);
      if (node.role === 'axis') axes.push(...node.items);
      for (const it of node.items || []) walk(it);
    })(v.scenegraph().root);
    const vanished = cf.items('text').filter(it => it.datum && it.datum.i !== undefined && it.datum.text !== undefined);
    const canvas = v.container().querySelector('canvas, svg');
    return {
      height: v.height(), legend: union(legends), axis: union(axes), vanished: union(vanished),
      n: vanished.length, origin: v.origin()[1], canvas: canvas.getBoundingClientRect().height,
      texts: vanished.map(it => it.text),
    };
  });
  const meta = spec.usermeta.cflame.diff;
  check(box.legend.y1 >= box.height, `the legend (${box.legend.y1}) overlaps the plot (height ${box.height})`);
  check(box.legend.y1 >= box.axis.y2 || box.axis.y2 <= 0 || box.axis.y1 < 0,
        `the legend (${JSON.stringify(box.legend)}) overlaps the axis (${JSON.stringify(box.axis)})`);
  if (meta.vanished > 0) {
    check(box.n === Math.min(meta.vanished, 20) + 1 + (meta.vanished > 20 ? 1 : 0),
          `${box.n} vanished lines drawn for ${meta.vanished} frames`);
    check(box.vanished.y1 >= box.legend.y2, `the vanished list (${JSON.stringify(box.vanished)}) overlaps the legend (${JSON.stringify(box.legend)})`);
    check(box.origin + box.vanished.y2 <= box.canvas + 1,
          `the vanished list ends at ${box.origin + box.vanished.y2}, past the view (${box.canvas})`);
  } else {
    check(box.n === 0, `${box.n} vanished lines drawn, none vanished`);
  }
  return `; diff tooltips of ${hovered.join(', ')}; ${meta.vanished} vanished`;
}

/* The rows a top view draws now: the data of its self bars. */
function topDrawn(page) {
  return page.evaluate(() =>
    cf.items('rect').filter(it => it.datum?.rank !== undefined && it.fill === it.datum.color)
      .map(it => it.datum));
}

/* The top table of a diff: a bar per row, the first row's tooltip. */
async function checkTopDiffPage(page, spec) {
  const rows = topRows(spec);
  const bars = await page.evaluate(() => cf.items('rect').filter(it => it.datum?.rank !== undefined).length);
  check(bars === rows.length, `${bars} bars drawn for ${rows.length} rows`);
  const pt = await page.evaluate(() => {
    const it = cf.items('rect').find(i => i.datum?.rank === 1);
    const v = window.view, box = v.container().querySelector('canvas, svg').getBoundingClientRect();
    const pad = v.padding(), [ox, oy] = v.origin();
    return { x: box.left + (pad.left || 0) + ox + it.x + Math.max(1, it.width) / 2,
             y: box.top + (pad.top || 0) + oy + it.y + it.height / 2 };
  });
  await page.mouse.move(pt.x, pt.y);
  const tip = page.locator('#vg-tooltip-element');
  await tip.waitFor({ state: 'visible', timeout: WAIT_MS });
  const tipText = await tip.innerText();
  for (const want of [rows[0].func, 'delta', rows[0].change]) {
    check(tipText.includes(want), `diff top tooltip lacks "${want}": ${JSON.stringify(tipText)}`);
  }
  return `top of a diff: ${rows.length} rows; tooltip of ${rows[0].func}`;
}

/* A top view in the page: the rows for each sort order, a tooltip, the
 * sort buttons, the bundle's SVG. Returns a note for the log. */
async function checkTopPage(page, spec, svg) {
  if (spec.usermeta.cflame.diff) return checkTopDiffPage(page, spec);
  let problem = topDrawnProblem(spec, await topDrawn(page), 'self');
  check(!problem, problem);
  // Hover the first row's self bar.
  const first = expectedTop(spec, 'self')[0];
  const pt = await page.evaluate(func => {
    const it = cf.items('rect').find(i => i.datum?.rank === 1 && i.datum.func === func &&
                                          i.fill === i.datum.color);
    const v = window.view, box = v.container().querySelector('canvas, svg').getBoundingClientRect();
    const pad = v.padding(), [ox, oy] = v.origin();
    return { x: box.left + (pad.left || 0) + ox + it.x + Math.max(1, it.width) / 2,
             y: box.top + (pad.top || 0) + oy + it.y + it.height / 2 };
  }, first.func);
  await page.mouse.move(pt.x, pt.y);
  const tip = page.locator('#vg-tooltip-element');
  await tip.waitFor({ state: 'visible', timeout: WAIT_MS });
  const tipText = await tip.innerText();
  for (const want of [first.func, 'self', 'total', first.total.toLocaleString('en-US')]) {
    check(tipText.includes(want), `top tooltip lacks "${want}": ${JSON.stringify(tipText)}`);
  }
  // Sort by total with the buttons under the view.
  const byTotal = expectedTop(spec, 'total');
  await page.locator('.vega-bindings input[name="sort"][value="total"]').check();
  await page.waitForFunction(func => cf.items('rect').some(
    it => it.datum?.rank === 1 && it.datum.func === func), byTotal[0].func, { timeout: WAIT_MS });
  problem = topDrawnProblem(spec, await topDrawn(page), 'total');
  check(!problem, problem);
  if (typeof svg === 'string') {
    const titles = await page.evaluate(text => {
      const d = new DOMParser().parseFromString(text, 'image/svg+xml');
      return d.querySelector('parsererror') ? -1 : d.querySelectorAll('path > title').length;
    }, svg);
    check(titles === expectedTop(spec, 'self').length, `top SVG: ${titles} titled rows`);
  }
  return `top: ${byTotal.length} rows, sorted by self then by total; tooltip of ${first.func}`;
}

/* The source of a diff: a bar per line with weight, the largest change's
 * tooltip. */
async function checkSourceDiffPage(page, spec) {
  const changed = changedLines(spec);
  const bars = await page.evaluate(() =>
    cf.items('rect').filter(it => it.datum?.k === 'line' || it.datum?.k === 'removed').length);
  check(bars === changed.length, `${bars} bars drawn for ${changed.length} lines with weight`);
  const top = [...changed].sort((a, b) => Math.abs(b.delta) - Math.abs(a.delta))[0];
  if (!top) return 'source of a diff: no line with weight';
  const pt = await page.evaluate(i => {
    const it = cf.items('rect').find(r => r.datum?.i === i);
    const v = window.view, box = v.container().querySelector('canvas, svg').getBoundingClientRect();
    const pad = v.padding(), [ox, oy] = v.origin();
    return { x: box.left + (pad.left || 0) + ox + it.x + Math.max(1, it.width) / 2,
             y: box.top + (pad.top || 0) + oy + it.y + it.height / 2 };
  }, top.i);
  await page.mouse.move(pt.x, pt.y);
  const tip = page.locator('#vg-tooltip-element');
  await tip.waitFor({ state: 'visible', timeout: WAIT_MS });
  const tipText = await tip.innerText();
  for (const want of [`${top.file}:${top.line}`, 'delta', top.deltas, top.change]) {
    check(tipText.includes(want), `source diff tooltip lacks "${want}": ${JSON.stringify(tipText)}`);
  }
  return `source of a diff: ${changed.length} lines with weight; tooltip of line ${top.ln}`;
}

/* A source view in the page. Returns a note for the log. */
async function checkSourcePage(page, spec, svg) {
  if (spec.usermeta.cflame.diff) return checkSourceDiffPage(page, spec);
  const lines = sourceRows(spec).filter(r => r.k === 'line');
  const bars = await page.evaluate(() => cf.items('rect').filter(it => it.datum?.k === 'line').length);
  check(bars === 2 * lines.length, `${bars} bars drawn for ${lines.length} lines`);
  const hot = hotLines(spec)[0];
  if (hot) {
    const pt = await page.evaluate(i => {
      const it = cf.items('rect').filter(r => r.datum?.i === i).sort((a, b) => b.width - a.width)[0];
      const v = window.view, canvas = v.container().querySelector('canvas, svg');
      const pad = v.padding(), [ox, oy] = v.origin();
      const at = () => {
        const box = canvas.getBoundingClientRect();
        return { x: box.left + (pad.left || 0) + ox + it.x + Math.max(1, it.width) / 2,
                 y: box.top + (pad.top || 0) + oy + it.y + it.height / 2 };
      };
      const p = at();
      if (p.y < 50 || p.y > window.innerHeight - 50) window.scrollBy(0, p.y - window.innerHeight / 2);
      return at();
    }, hot.i);
    await page.mouse.move(pt.x, pt.y);
    const tip = page.locator('#vg-tooltip-element');
    await tip.waitFor({ state: 'visible', timeout: WAIT_MS });
    const tipText = await tip.innerText();
    for (const want of [`${hot.file}:${hot.line}`, 'self', 'total', hot.self.toLocaleString('en-US')]) {
      check(tipText.includes(want), `source tooltip lacks "${want}": ${JSON.stringify(tipText)}`);
    }
  }
  if (typeof svg === 'string') {
    const titled = await page.evaluate(text => {
      const d = new DOMParser().parseFromString(text, 'image/svg+xml');
      return d.querySelector('parsererror') ? -1 : d.querySelectorAll('path > title').length;
    }, svg);
    check(titled === hotLines(spec).length, `source SVG: ${titled} titled bars`);
  }
  return `source: ${lines.length} lines; tooltip of ${hot ? `${hot.file}:${hot.line}` : 'none'}`;
}

/* A sandwich in the page: every frame of both halves drawn. */
async function checkSandwichPage(page, spec) {
  const n = sandwichHalves(spec).reduce((k, h) => k + framesOf(h).length, 0);
  const drawn = await page.evaluate(() => cf.frameItems().length);
  check(drawn === n, `${drawn} frames drawn for ${n} rows`);
  return `sandwich: ${n} frames around ${spec.usermeta.cflame.focus}`;
}

/* A chart in the page. Returns a note for the log. */
async function checkChartPage(page, spec) {
  const bars = chartBars(spec), meta = spec.usermeta.cflame;
  const drawn = await page.evaluate(() => cf.items('rect').filter(it => it.datum?.t1 !== undefined).length);
  check(drawn === bars.length, `${drawn} rects drawn for ${bars.length} bars`);
  const longest = [...bars].sort((a, b) => (b.t1 - b.t0) - (a.t1 - a.t0))[0];
  const pt = await page.evaluate(([t0, t1, depth]) => {
    const v = window.view, canvas = v.container().querySelector('canvas, svg');
    const pad = v.padding(), [ox, oy] = v.origin(), sx = v.scale('x');
    const box = canvas.getBoundingClientRect();
    const it = cf.items('rect').find(i => i.datum?.t0 === t0 && i.datum?.t1 === t1 &&
                                          i.datum?.d === depth);
    return { x: box.left + (pad.left || 0) + ox + sx((t0 + t1) / 2),
             y: box.top + (pad.top || 0) + oy + it.y + 7 };
  }, [longest.t0, longest.t1, longest.depth]);
  await page.mouse.move(pt.x, pt.y);
  const tip = page.locator('#vg-tooltip-element');
  await tip.waitFor({ state: 'visible', timeout: WAIT_MS });
  const tipText = await tip.innerText();
  for (const want of [longest.func, 'thread', longest.thread, 'time']) {
    check(tipText.includes(want), `chart tooltip lacks "${want}": ${JSON.stringify(tipText)}`);
  }
  const d0 = await page.evaluate(() => cf.domain());
  check(Math.abs(d0[0] - meta.from) < 1e-9 && Math.abs(d0[1] - meta.to) < 1e-9,
        `initial time axis ${JSON.stringify(d0)}, not ${meta.from}..${meta.to}`);
  await page.mouse.wheel(0, -300);
  await waitDomain(page, `cf.domain()[1] - cf.domain()[0] < ${0.9 * (meta.to - meta.from)}`, 'after the wheel');
  const dz = await page.evaluate(() => cf.domain());
  await page.mouse.move(pt.x, pt.y);
  await page.mouse.down();
  await page.mouse.move(pt.x - 100, pt.y, { steps: 8 });
  await page.mouse.up();
  await waitDomain(page, `cf.domain()[0] > ${dz[0]}`, 'after dragging left');
  const dp = await page.evaluate(() => cf.domain());
  check(Math.abs((dp[1] - dp[0]) - (dz[1] - dz[0])) < 1e-6 * (meta.to - meta.from),
        `the drag changed the span: ${dz} -> ${dp}`);
  await page.mouse.dblclick(pt.x, pt.y);
  await waitDomain(page, `Math.abs(cf.domain()[1] - cf.domain()[0] - ${meta.to - meta.from}) < 1e-9`,
                   'after a double-click');
  return `chart: ${bars.length} bars; zoomed to ${(dz[1] - dz[0]).toFixed(3)} s, panned, reset`;
}

async function testFile(browser, file, screenshot) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const spec = doc[VL_MIME] || doc;
  const svg = svgOf(doc);
  const view = viewOf(spec);
  const rows = view === 'flame' ? framesOf(spec) : [];
  const total = rows.length ? rows[0].count : 0;
  // The unit the spec says its widths are in (samples, bytes or allocations).
  const unit = spec.usermeta?.cflame?.unit ?? (rows[0]?.allocs !== undefined ? 'bytes' : 'samples');

  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });

  page.setDefaultTimeout(WAIT_MS);
  const logged = [];
  page.on('console', msg => {
    if (msg.type() === 'error' || msg.type() === 'warning') logged.push(`${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', err => logged.push(`page error: ${err.message}`));
  try {
    await page.setContent(PAGE);
    const started = Date.now();
    await page.evaluate(async s => {
      const result = await vegaEmbed('#vis', s, { actions: true });
      window.view = result.view;
    }, spec);
    const embedMs = Date.now() - started;
    await page.evaluate(installHelpers);
    if (view !== 'flame') {
      const note = view === 'top' ? await checkTopPage(page, spec, svg)
                 : view === 'chart' ? await checkChartPage(page, spec)
                 : view === 'sandwich' ? await checkSandwichPage(page, spec)
                                    : await checkSourcePage(page, spec, svg);
      if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
      check(logged.length === 0, `console: ${logged.slice(0, 5).join(' | ')}`);
      console.log(`  embedded in ${embedMs} ms; ${note}`);
      return null;
    }

    // Drawn: one rect per row (the band's level and beyond: a piece of the
    // band per frame with deeper ones), labels inside their frames.
    const meta = spec.usermeta?.cflame || {};
    const cut = meta.shown < meta.levels ? meta.shown - 1 : Infinity;
    const nDrawn = rows.filter(r => r.depth < cut || (r.depth === cut && r.deep === r.depth)).length;
    const nRects = await page.evaluate(() => cf.frameItems().length);
    check(nRects === nDrawn, `${nRects} frame rects drawn for ${nDrawn} rows`);
    if (total === 0) {
      // An empty profile: it draws, and there is nothing to interact with.
      check(logged.length === 0, `console: ${logged.slice(0, 5).join(' | ')}`);
      console.log('  empty profile embedded');
      return null;
    }
    const d0 = await page.evaluate(() => cf.domain());
    check(d0[0] === 0 && d0[1] === total, `initial x domain ${JSON.stringify(d0)}`);
    const badLabels = await page.evaluate(() => {
      const sx = window.view.scale('x');
      return cf.labelItems().filter(it => {
        if (!it.text) return false;
        const right = Math.min(sx(it.datum.x1), window.view.width());
        return it.x < sx(it.datum.x0) || it.x + (it.limit || 0) > right + 0.5 || !(it.limit > 0);
      }).length;
    });
    check(badLabels === 0, `${badLabels} labels not limited to their frame`);
    const nLabels = await page.evaluate(() => cf.labelItems().filter(it => it.text).length);
    const hasLabels = spec.layer.some(l => l.name === 'labels');
    check(nLabels > 0 || !hasLabels, 'no frame has a label');

    // Search: type a function name, partly in the wrong case.
    const target = pickFrame(rows);
    const needle = target.func.length > 3 ? target.func.slice(1, -1).toUpperCase() : target.func;
    const input = page.locator('.vega-bindings input[name="search"]');
    check((await input.count()) === 1, 'no search box');
    await input.pressSequentially(needle, { delay: 5 });
    await page.waitForFunction(() => cf.texts().some(t => t.startsWith('matched: ')), null,
                               { timeout: WAIT_MS });
    const want = expectedShare(rows, needle);
    const shown = await page.evaluate(() => cf.texts().find(t => t.startsWith('matched: ')));
    const shareClipped = await page.evaluate(() => {
      let clipped = null;
      (function walk(node) {
        if (!node) return;
        if (node.marktype === 'text' && node.role === 'mark' &&
            (node.items || []).some(it => String(it.text || '').startsWith('matched: '))) {
          clipped = !!node.clip;
        }
        for (const it of node.items || []) walk(it);
      })(window.view.scenegraph().root);
      return clipped;
    });
    check(shareClipped === false, 'the matched share is clipped away (it sits above the plot)');
    check(shown === `matched: ${want.toFixed(2)}%`, `share shows "${shown}", expected ${want.toFixed(2)}%`);
    const hl = await page.evaluate(n => {
      const out = { match: 0, dimmed: 0, wrong: 0 };
      for (const it of cf.frameItems()) {
        const m = it.datum.func.toLowerCase().includes(n.toLowerCase());
        if (m && it.opacity === 1 && it.strokeWidth > 1) out.match++;
        else if (!m && it.opacity < 1) out.dimmed++;
        else out.wrong++;
      }
      return out;
    }, needle);
    check(hl.match > 0 && hl.wrong === 0, `search highlight: ${JSON.stringify(hl)}`);
    await input.fill('');
    await page.waitForFunction(() => !cf.texts().some(t => t.startsWith('matched: ')), null,
                               { timeout: WAIT_MS });
    const undimmed = await page.evaluate(() => cf.frameItems().every(it => it.opacity === 1));
    check(undimmed, 'frames stay dimmed after the search is cleared');

    // Tooltip of the frame.
    let pt = await page.evaluate(r => cf.pointOf(r), target);
    await page.mouse.move(pt.x, pt.y);
    const tip = page.locator('#vg-tooltip-element');
    await tip.waitFor({ state: 'visible', timeout: WAIT_MS });
    const tipText = await tip.innerText();
    // The location as far as it is known: file:line, and the module where
    // it is not the file.
    const where = target.file ? ['file:line', target.file + (target.line ? `:${target.line}` : '')] : [];
    if (target.module && target.module !== target.file) where.push('module', target.module);
    const isDiff = rows[0].change !== undefined;
    for (const want of ['function', target.func, ...where, unit,
                        ...(isDiff ? [] : ['self', 'percent']),
                        target.count.toLocaleString('en-US')]) {
      check(tipText.includes(want), `tooltip lacks "${want}": ${JSON.stringify(tipText)}`);
    }
    let diffNote = '';
    if (isDiff) {
      diffNote = await checkDiffPage(page, spec, rows, unit);
      pt = await page.evaluate(r => cf.pointOf(r), target);
    }

    // Click zooms to the frame; double-click resets.
    await page.mouse.click(pt.x, pt.y);
    await waitDomain(page, `cf.domain()[0] === ${target.x0} && cf.domain()[1] === ${target.x1}`,
                     `after clicking ${target.func} [${target.x0}, ${target.x1})`);
    await page.mouse.dblclick(pt.x, pt.y);
    await waitDomain(page, `cf.domain()[0] === 0 && cf.domain()[1] === ${total}`,
                     'after double-click');

    // The wheel zooms in around the pointer.
    const rootPt = await page.evaluate(r => cf.pointOf(r), rows[0]);
    // From one side: after a scroll the root can lie where the pointer
    // already is, and vega picks the item under it on a move only.
    await page.mouse.move(rootPt.x + 5, rootPt.y);
    await page.mouse.move(rootPt.x, rootPt.y);
    await page.mouse.wheel(0, -300);
    await waitDomain(page, `cf.domain()[1] - cf.domain()[0] < ${total} * 0.95`, 'after wheel zoom');
    const dz = await page.evaluate(() => cf.domain());
    // A drag pans: same span, shifted; and the drag is no click.
    await page.mouse.move(rootPt.x, rootPt.y);
    await page.mouse.down();
    await page.mouse.move(rootPt.x - 60, rootPt.y, { steps: 6 });
    await page.mouse.move(rootPt.x - 120, rootPt.y, { steps: 6 });
    await page.mouse.up();
    await waitDomain(page, `cf.domain()[0] > ${dz[0]}`, 'after drag');
    const dp = await page.evaluate(() => cf.domain());
    const span = (d) => d[1] - d[0];
    check(Math.abs(span(dp) - span(dz)) < 1e-6 * total, `drag changed the span: ${dz} -> ${dp}`);
    // After a pan, a click still zooms to a frame.
    pt = await page.evaluate(r => cf.pointOf(r), rows[0]);
    await page.mouse.click(pt.x, pt.y);
    await waitDomain(page, `cf.domain()[0] === 0 && cf.domain()[1] === ${total}`,
                     'after clicking the root while panned');

    const bandNote = await checkBandPage(page, spec, rows);
    const mergedNote = await checkMergedPage(page, spec, rows);

    // The SVG of the bundle, parsed by the browser.
    if (typeof svg === 'string') {
      const res = await page.evaluate(text => {
        const d = new DOMParser().parseFromString(text, 'image/svg+xml');
        const err = d.querySelector('parsererror');
        return { err: err ? err.textContent : null, frames: d.querySelectorAll('path > title').length };
      }, svg);
      check(res.err === null, `SVG does not parse: ${res.err}`);
      check(res.frames === rows.length, `SVG has ${res.frames} titled frames for ${rows.length} rows`);
    }

    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    check(logged.length === 0, `console: ${logged.slice(0, 5).join(' | ')}`);
    console.log(`  ${rows.length} rows embedded in ${embedMs} ms; ${nLabels} labels; ` +
                `search "${needle}" ${shown}${diffNote}${bandNote}${mergedNote}`);
    return null;
  } catch (e) {
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true }).catch(() => {});
    if (logged.length) console.log(`  console: ${logged.slice(0, 5).join(' | ')}`);
    return e instanceof Failure ? e.message : e.stack || String(e);
  } finally {
    await page.close();
  }
}

const args = process.argv.slice(2);
let screenshot = null;
const si = args.indexOf('--screenshot');
if (si >= 0) {
  screenshot = args[si + 1];
  args.splice(si, 2);
}
/* The files named, with each directory replaced by its *.json files. */
function expandDirs(names) {
  return names.flatMap(name =>
    fs.statSync(name).isDirectory()
      ? fs.readdirSync(name).filter(f => f.endsWith('.json')).sort().map(f => path.join(name, f))
      : [name]);
}

args.splice(0, args.length, ...expandDirs(args));
if (args.length === 0) {
  console.error('usage: node browser_test.mjs [--screenshot PNG] SPEC_OR_BUNDLE.json|DIR...');
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
if (!fs.existsSync(executablePath)) {
  console.error(`no Chromium at ${executablePath} (apt-get install chromium, or set CHROMIUM)`);
  process.exit(1);
}
const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cflame-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
context.setDefaultTimeout(WAIT_MS);
let failed = 0;
try {
  for (const [i, file] of args.entries()) {
    console.log(`${file}:`);
    const shot = screenshot && args.length > 1 ? screenshot.replace(/(\.png)?$/, `-${i}.png`) : screenshot;
    const problem = await testFile(context, file, shot);
    if (problem) {
      failed++;
      console.log(`  FAIL ${problem}`);
    } else {
      console.log('  ok');
    }
  }
} finally {
  await context.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(`${args.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
