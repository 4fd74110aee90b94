// SPDX-License-Identifier: BSD-3-Clause
// The standalone page of `cflame --format html` in a real browser.
//
//   node tests/render/html_page_test.mjs CFLAME_BINARY PERF_SCRIPT_TEXT
//
// Makes two pages with the cflame binary (a profile of the capture, and its
// diff against itself) and opens each in Debian's Chromium, headless
// (/usr/bin/chromium, or $CHROMIUM). A page has a tab per view that can
// draw its profile: the profile's are flame, callers, top, source and
// chart, the diff's flame, callers, top and source; the flame graph's tab is shown
// first. Each page is opened three ways:
//   - offline: the CDN scripts fail to load (every request to the CDN is
//     aborted, as on a machine without a network). The inline SVG shows,
//     with one titled path per frame of the spec, and the note under it says
//     the interactive view's scripts did not load;
//   - JavaScript off: the SVG shows, and the note says what the
//     interactive view needs; clicking another tab shows that view's SVG
//     and hides the first;
//   - online: the CDN's vega@5, vega-lite@5 and vega-embed@6 are served
//     from tests/render/node_modules (the builds those URLs stand for).
//     vega-embed draws the interactive view with every frame of the spec,
//     and every other tab's view, the SVGs and the notes are hidden,
//     hovering a frame shows its tooltip, and nothing is logged to the
//     console as a warning or an error.
// Exits 0 when every check passes; otherwise prints what failed and exits 1.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { framesOf } from './frames.mjs';

/* How long a wait for the page may take. Generous: a loaded machine can make
 * Chromium slow, and a wait ends as soon as its condition holds, so a
 * passing run never pays for it. */
const WAIT_MS = 60_000;

const here = path.dirname(fileURLToPath(import.meta.url));
const [cflame, capture] = process.argv.slice(2);
if (!cflame || !capture) {
  console.error('usage: node html_page_test.mjs CFLAME_BINARY PERF_SCRIPT_TEXT');
  process.exit(2);
}

const CDN = {
  'https://cdn.jsdelivr.net/npm/vega@5': 'vega/build/vega.min.js',
  'https://cdn.jsdelivr.net/npm/vega-lite@5': 'vega-lite/build/vega-lite.min.js',
  'https://cdn.jsdelivr.net/npm/vega-embed@6': 'vega-embed/build/vega-embed.min.js',
};

class Failure extends Error {}
function check(cond, what) {
  if (!cond) throw new Failure(what);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cflame-html-'));
function makePage(name, args, tabs) {
  const file = path.join(dir, `${name}.html`);
  execFileSync(cflame, ['--format', 'html', ...args, '-o', file]);
  const spec = JSON.parse(execFileSync(cflame, ['--format', 'vegalite', ...args]).toString());
  return { name, file, rows: framesOf(spec), tabs };
}

/* The page's tabs, in order. */
function tabsOf(page) {
  return page.evaluate(() => [...document.querySelectorAll('.cflame-tabs > input')]
    .map(i => i.id.replace('cflame-tab-', '')));
}

/* What the static part of view's panel shows (the flame graph's). */
async function staticView(page, view = 'flame') {
  return page.evaluate(view => {
    const panel = document.getElementById(`cflame-panel-${view}`);
    const stat = panel.querySelector('.cflame-static'), note = panel.querySelector('.cflame-note');
    const box = stat.querySelector('svg')?.getBoundingClientRect();
    return {
      svgShown: !!box && box.width > 100 && box.height > 50 &&
        getComputedStyle(stat).display !== 'none' && getComputedStyle(panel).display !== 'none',
      titledFrames: stat.querySelectorAll('svg path > title').length,
      note: note.textContent,
      noteShown: getComputedStyle(note).display !== 'none',
    };
  }, view);
}

async function offline(browser, p) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  let cdnRequests = 0;
  await page.route('https://cdn.jsdelivr.net/**', route => {
    cdnRequests++;
    return route.abort('internetdisconnected');
  });
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  await page.goto('file://' + p.file, { waitUntil: 'load' });
  await page.waitForFunction(() => /did not load/.test(document.querySelector('.cflame-note').textContent),
                             null, { timeout: WAIT_MS }).catch(() => {});
  const v = await staticView(page);
  check(cdnRequests === 3, `offline: ${cdnRequests} requests to the CDN, expected 3`);
  check(v.svgShown, 'offline: the SVG is not shown');
  check(v.titledFrames === p.rows.length, `offline: ${v.titledFrames} titled frames for ${p.rows.length} frames`);
  check(v.noteShown && /did not load/.test(v.note), `offline: the note says "${v.note}"`);
  check(errors.length === 0, `offline: page errors ${errors.join(' | ')}`);
  await context.close();
}

async function noScript(browser, p) {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  await page.route('https://cdn.jsdelivr.net/**', route => route.abort('internetdisconnected'));
  await page.goto('file://' + p.file, { waitUntil: 'load' });
  const v = await staticView(page);
  check(v.svgShown, 'JavaScript off: the SVG is not shown');
  check(v.titledFrames === p.rows.length, `JavaScript off: ${v.titledFrames} titled frames`);
  check(v.noteShown && /needs JavaScript/.test(v.note), `JavaScript off: the note says "${v.note}"`);
  const tabs = await tabsOf(page);
  check(JSON.stringify(tabs) === JSON.stringify(p.tabs), `JavaScript off: tabs ${tabs}, not ${p.tabs}`);
  // Another tab, by CSS alone: its SVG shows, the flame graph's does not.
  const other = tabs[tabs.length - 1];
  await page.click(`label[for=cflame-tab-${other}]`);
  const o = await staticView(page, other), f = await staticView(page);
  check(o.svgShown && !f.svgShown, `JavaScript off: the ${other} tab does not show its view alone`);
  await context.close();
}

async function online(browser, p) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  const logged = [];
  page.on('console', m => {
    if (m.type() === 'error' || m.type() === 'warning') logged.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', e => logged.push(`pageerror: ${e}`));
  const served = [];
  await page.route('https://cdn.jsdelivr.net/**', route => {
    const lib = CDN[route.request().url()];
    if (!lib) return route.abort('failed');
    served.push(lib);
    return route.fulfill({
      status: 200,
      contentType: 'application/javascript',
      body: fs.readFileSync(path.join(here, 'node_modules', lib)),
    });
  });
  await page.goto('file://' + p.file, { waitUntil: 'load' });
  await page.waitForFunction(() => window.cflameView !== undefined, null, { timeout: WAIT_MS })
    .catch(() => {
      throw new Failure(`online: vega-embed did not draw the view; console: ${logged.join(' | ')}`);
    });
  check(served.length === 3, `online: served ${served.join(', ')}`);
  const v = await page.evaluate(() => {
    const frames = [];
    (function walk(node) {
      if (!node) return;
      if (node.marktype === 'rect' && node.items) {
        for (const it of node.items) if (it.datum && it.datum.x1 !== undefined) frames.push(it);
      }
      for (const it of node.items || []) walk(it);
    })(window.cflameView.scenegraph().root);
    const canvas = document.querySelector('#cflame-panel-flame .cflame-vis canvas, ' +
                                          '#cflame-panel-flame .cflame-vis svg');
    const box = canvas && canvas.getBoundingClientRect();
    return {
      frames: frames.length,
      drawn: !!box && box.width > 100 && box.height > 50,
      staticHidden: getComputedStyle(document.querySelector('#cflame-panel-flame .cflame-static'))
        .display === 'none',
      noteHidden: getComputedStyle(document.querySelector('#cflame-panel-flame .cflame-note'))
        .display === 'none',
    };
  });
  check(v.drawn, 'online: no interactive view drawn');
  check(v.frames === p.rows.length, `online: ${v.frames} frames drawn for ${p.rows.length} rows`);
  check(v.staticHidden && v.noteHidden, 'online: the static SVG or its note still shows');
  await page.waitForFunction(n => Object.keys(window.cflameViews).length === n, p.tabs.length,
                             { timeout: WAIT_MS })
    .catch(() => { throw new Failure('online: not every tab has its interactive view'); });
  // Hover the root frame: its tooltip.
  const pt = await page.evaluate(() => {
    const view = window.cflameView;
    const canvas = view.container().querySelector('canvas, svg');
    const box = canvas.getBoundingClientRect();
    const pad = view.padding();
    const [ox, oy] = view.origin();
    const sx = view.scale('x'), sy = view.scale('y');
    const [d0, d1] = sx.domain();
    return { x: box.left + (pad.left || 0) + ox + sx((d0 + d1) / 2),
             y: box.top + (pad.top || 0) + oy + sy(0.5) };
  });
  await page.mouse.move(pt.x, pt.y);
  const tip = page.locator('#vg-tooltip-element');
  await tip.waitFor({ state: 'visible', timeout: WAIT_MS })
    .catch(() => { throw new Failure('online: no tooltip over the root frame'); });
  const tipText = await tip.innerText();
  check(tipText.includes('all'), `online: the root's tooltip says ${JSON.stringify(tipText)}`);
  check(logged.length === 0, `online: console: ${logged.slice(0, 5).join(' | ')}`);
  await context.close();
}

const pages = [makePage('graph', [capture], ['flame', 'callers', 'top', 'source', 'chart']),
               makePage('diff', ['--diff', capture, capture], ['flame', 'callers', 'top', 'source'])];
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failed = 0, passed = 0;
try {
  for (const p of pages) {
    for (const [what, fn] of [['offline', offline], ['JavaScript off', noScript], ['online', online]]) {
      try {
        await fn(browser, p);
        passed++;
        console.log(`${p.name}.html ${what}: ok (${p.rows.length} frames)`);
      } catch (e) {
        failed++;
        console.log(`${p.name}.html ${what}: FAIL ${e instanceof Failure ? e.message : e.stack}`);
      }
    }
  }
} finally {
  await browser.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
